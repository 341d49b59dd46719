
func.func @lane_read(%l: tensor<4x8xf32>, %h: tensor<3xf32>) {
  %r = needle.lane_read %l, %h : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<8xf32>
  return
}

