
func.func @sigmoid_gate(%x: tensor<8xf32>, %g: tensor<4xf32>) {
  %r = needle.sigmoid_gate %x, %g : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

