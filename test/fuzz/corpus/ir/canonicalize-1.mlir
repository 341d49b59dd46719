
func.func @unused_rotation(%x: tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  return
}

