
func.func @block_terminator(%l: tensor<4x8xf32>, %t: i32) {
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    func.return
  }
  return
}

