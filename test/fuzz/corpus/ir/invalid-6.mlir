
func.func @dequant(%w: !needle.cq<2, 128, [6, 100]>) {
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x100xf32>
  return
}

