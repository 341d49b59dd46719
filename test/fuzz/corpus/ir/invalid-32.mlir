
func.func @rope_theta(%x: tensor<8xf32>, %p: i32) {
  %r = needle.rope %x, %p {heads = 2, theta = 0.0 : f64} : (tensor<8xf32>, i32) -> tensor<8xf32>
  return
}

