func.func @f(%l: tensor<4x128xf32>, %t: i32, %p: i32, %q: tensor<8xf32>, %kv: tensor<4xf32>, %c: tensor<128xf32>) {
  %r, %cell = needle.block %l, %t, %p {global = false, id = 0 : i64, source = 0 : i64} : (tensor<4x128xf32>, i32, i32) -> (tensor<4x128xf32>, tensor<128xf32>) {
  ^bb0(%a: tensor<4x128xf32>, %b: i32, %d: i32):
    %o = needle.attention %q, %kv, %kv {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
    needle.yield %a, %c : tensor<4x128xf32>, tensor<128xf32>
  }
  return
}
