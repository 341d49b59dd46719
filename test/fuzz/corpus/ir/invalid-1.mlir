
func.func @group(%w: !needle.cq<2, 100, [4, 128]>) { return }

