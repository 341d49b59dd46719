
func.func @lane_norm(%l: tensor<4x8xf32>) {
  %r = needle.lane_norm %l {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

