
func.func @lanes(%x: tensor<3x8xf32>) {
  %r = needle.lane_mean %x : (tensor<3x8xf32>) -> tensor<8xf32>
  return
}

