
func.func @hadamard_group(%x: tensor<128xf32>) {
  %r = needle.hadamard %x {group = 96} : (tensor<128xf32>) -> tensor<128xf32>
  return
}

