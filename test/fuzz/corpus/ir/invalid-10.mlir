
func.func @cq_matmul_table(%w: !needle.cq<2, 128, [2, 6, 128]>, %x: tensor<128xf32>) {
  %y = needle.cq_matmul %w, %x : (!needle.cq<2, 128, [2, 6, 128]>, tensor<128xf32>) -> tensor<6xf32>
  return
}

