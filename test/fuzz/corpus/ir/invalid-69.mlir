
func.func @taps_result(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  %r = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<6xf32>
  return
}

