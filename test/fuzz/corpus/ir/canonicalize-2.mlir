
func.func @stateful_kept(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  %a = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  return
}

