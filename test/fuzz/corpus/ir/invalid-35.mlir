
func.func @attention_window(%q: tensor<16xf32>, %k: tensor<8xf32>) {
  %r = needle.attention %q, %k, %k {heads = 4, kv_heads = 2, window = -4} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
  return
}

