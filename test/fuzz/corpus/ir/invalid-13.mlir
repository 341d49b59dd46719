
func.func @dynamic(%x: tensor<?xf32>) {
  %r = needle.hadamard %x {group = 128} : (tensor<?xf32>) -> tensor<128xf32>
  return
}

