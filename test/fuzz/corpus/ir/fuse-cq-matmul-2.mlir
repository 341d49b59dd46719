
func.func @float_weight(%x: tensor<8xf32>) -> tensor<6xf32> {
  %w = needle.weight "attn.q" block 0 : tensor<6x8xf32>
  %y = needle.matmul %w, %x : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}
