
func.func @weight_dynamic() {
  %w = needle.weight "attn.q" block 0 : tensor<?x4xf32>
  return
}

