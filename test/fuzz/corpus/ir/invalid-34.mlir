
func.func @attention_key(%q: tensor<16xf32>, %k: tensor<6xf32>, %v: tensor<8xf32>) {
  %r = needle.attention %q, %k, %v {heads = 4, kv_heads = 2, window = 0} : (tensor<16xf32>, tensor<6xf32>, tensor<8xf32>) -> tensor<16xf32>
  return
}

