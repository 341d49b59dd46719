
func.func @hadamard_padding(%x: tensor<100xf32>) {
  %r = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<100xf32>
  return
}

