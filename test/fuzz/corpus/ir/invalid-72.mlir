
func.func @lane_write_result(%l: tensor<4x8xf32>, %m: tensor<4x4xf32>, %h: tensor<4xf32>, %y: tensor<8xf32>) {
  %r = needle.lane_write %l, %m, %h, %y : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x6xf32>
  return
}

