
func.func @scale(%x: tensor<8xf32>) {
  %r = needle.scale %x {factor = 2.0 : f32} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

