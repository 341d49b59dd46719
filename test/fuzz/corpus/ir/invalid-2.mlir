
func.func @dims(%w: !needle.cq<2, 128, [0, 128]>) { return }

