
func.func @mlp_cond(%x: tensor<6xf32>, %wa: tensor<2x2xf32>, %wb: tensor<4x4xf32>, %d: tensor<8xf32>, %cv: tensor<6x4xf32>, %cu: tensor<8x8xf32>, %p: tensor<8xi32>) {
  %m = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x4xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  return
}

