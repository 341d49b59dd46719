
func.func @bits(%w: !needle.cq<5, 128, [4, 128]>) { return }

