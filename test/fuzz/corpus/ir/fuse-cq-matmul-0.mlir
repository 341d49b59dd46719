

func.func @fuse(%x: tensor<128xf32>) -> tensor<6xf32> {
  %w = needle.weight "attn.q" block 0 : !needle.cq<2, 128, [6, 128]>
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 128]>) -> tensor<6x128xf32>
  %y = needle.matmul %d, %x : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

