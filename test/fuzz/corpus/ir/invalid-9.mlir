
func.func @cq_matmul_rows(%w: !needle.cq<2, 128, [6, 128]>, %x: tensor<128xf32>) {
  %y = needle.cq_matmul %w, %x : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<5xf32>
  return
}

