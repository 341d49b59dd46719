
func.func @rope(%x: tensor<12xf32>, %p: i32) {
  %r = needle.rope %x, %p {heads = 4, theta = 10000.0 : f64} : (tensor<12xf32>, i32) -> tensor<12xf32>
  return
}

