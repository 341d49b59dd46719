
func.func @taps_stride(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  %r = needle.causal_taps %x, %t {stride = 0} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  return
}

