
func.func @mhc_position(%p: tensor<4xf32>, %r: tensor<16xf32>, %a: tensor<3xf32>, %b: tensor<4x4xf32>) {
  %0:3 = needle.mhc_gates %p, %p, %r, %a, %p, %p, %b {position = -1} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
  return
}

