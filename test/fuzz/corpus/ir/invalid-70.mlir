
func.func @zc_result(%x: tensor<8xf32>, %s: tensor<8xf32>) {
  %r = needle.zc_norm %x, %s {heads = 1, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

