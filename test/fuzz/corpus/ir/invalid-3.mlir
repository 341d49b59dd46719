
func.func @weight_name() {
  %w = needle.weight "" : tensor<4xf32>
  return
}

