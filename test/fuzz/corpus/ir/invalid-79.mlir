
func.func @kron_mlp_dynamic_permutation(%x: tensor<8xf32>, %wa: tensor<2x2xf32>, %wb: tensor<4x4xf32>, %n: tensor<8xf32>, %cv: tensor<8x8xf32>, %cu: tensor<8x8xf32>, %p: tensor<?xi32>) -> tensor<8xf32> {
  %r = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %n, %n, %n, %n, %n, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

