
func.func @lanes_init(%x: tensor<8xf32>) {
  %r = needle.lanes_init %x : (tensor<8xf32>) -> tensor<4x4xf32>
  return
}

