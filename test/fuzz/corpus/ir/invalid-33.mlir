
func.func @attention_kv(%q: tensor<12xf32>, %k: tensor<8xf32>) {
  %r = needle.attention %q, %k, %k {heads = 3, kv_heads = 2, window = 0} : (tensor<12xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<12xf32>
  return
}

