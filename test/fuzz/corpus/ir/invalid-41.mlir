
func.func @block_update(%x: tensor<8xf32>, %u: tensor<4xf32>) {
  %r = needle.block_update %x, %x, %u : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

