
func.func @engram_gate(%u: tensor<8xf32>, %k: tensor<6xf32>) {
  %r = needle.engram_gate %u, %k, %u {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<6xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

