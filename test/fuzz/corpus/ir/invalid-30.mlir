
func.func @zc_scale(%x: tensor<12xf32>, %s: tensor<3xf32>) {
  %r = needle.zc_norm %x, %s {heads = 1, eps = 1.0e-6 : f32} : (tensor<12xf32>, tensor<3xf32>) -> tensor<12xf32>
  return
}

