
func.func @zc_heads(%x: tensor<10xf32>, %s: tensor<3xf32>) {
  %r = needle.zc_norm %x, %s {heads = 3, eps = 1.0e-6 : f32} : (tensor<10xf32>, tensor<3xf32>) -> tensor<10xf32>
  return
}

