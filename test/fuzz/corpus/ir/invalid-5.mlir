
func.func @weight_block() {
  %w = needle.weight "attn_norm" block -2 : tensor<4xf32>
  return
}

