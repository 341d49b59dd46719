
func.func @weight_rows() {
  %w = needle.weight "confidence.gain" rows [3, -1] : tensor<3x2xf32>
  return
}

