
func.func @rope_result(%x: tensor<8xf32>, %p: i32) {
  %r = needle.rope %x, %p {heads = 2, theta = 10000.0 : f64} : (tensor<8xf32>, i32) -> tensor<16xf32>
  return
}

