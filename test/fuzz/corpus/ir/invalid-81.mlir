
func.func @float_engram_padded(%t: tensor<2x64x64xf32>, %tok: i32, %pos: i32) -> tensor<256xf32> {
  %r = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (tensor<2x64x64xf32>, i32, i32) -> tensor<256xf32>
  return %r : tensor<256xf32>
}
