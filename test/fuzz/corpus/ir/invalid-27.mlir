
func.func @taps(%x: tensor<8xf32>, %t: tensor<3x6xf32>) {
  %r = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x6xf32>) -> tensor<8xf32>
  return
}

