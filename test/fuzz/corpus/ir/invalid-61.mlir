
func.func @block_yield(%l: tensor<4x8xf32>, %t: i32) {
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_norm %a {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<32xf32>
    %n = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    %w = needle.lanes_init %m : (tensor<32xf32>) -> tensor<4x32xf32>
    needle.yield %w, %n : tensor<4x32xf32>, tensor<8xf32>
  }
  return
}

