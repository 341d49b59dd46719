
func.func @mlp_width(%x: tensor<6xf32>, %wa: tensor<2x2xf32>, %wb: tensor<3x3xf32>, %d: tensor<6xf32>, %cv: tensor<6x8xf32>, %cu: tensor<8x6xf32>, %p: tensor<6xi32>) {
  %m = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6xi32>, tensor<6xi32>) -> tensor<6xf32>
  return
}

