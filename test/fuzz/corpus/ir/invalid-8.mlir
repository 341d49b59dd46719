
func.func @cq_matmul_unrotated(%w: !needle.cq<2, 128, [6, 100]>, %x: tensor<100xf32>) {
  %y = needle.cq_matmul %w, %x : (!needle.cq<2, 128, [6, 100]>, tensor<100xf32>) -> tensor<6xf32>
  return
}

