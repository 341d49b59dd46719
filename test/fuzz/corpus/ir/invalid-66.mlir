

func.func @residual_gate_update(%x: tensor<8xf32>, %a: tensor<6xf32>, %g: tensor<1xf32>) {
  %r = needle.residual_gate %x, %a, %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<6xf32>, tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  return
}

