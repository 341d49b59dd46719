
func.func @lanes_dynamic(%l: tensor<4x?xf32>) {
  %r = needle.lane_mean %l : (tensor<4x?xf32>) -> tensor<8xf32>
  return
}

