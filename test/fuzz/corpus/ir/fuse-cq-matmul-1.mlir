
func.func @two_users(%x: tensor<128xf32>, %z: tensor<128xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %w = needle.weight "attn.k" block 2 : !needle.cq<4, 128, [6, 128]>
  %d = needle.cq_dequant %w : (!needle.cq<4, 128, [6, 128]>) -> tensor<6x128xf32>
  %a = needle.matmul %d, %x : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  %b = needle.matmul %d, %z : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %a, %b : tensor<6xf32>, tensor<6xf32>
}

