
func.func @engram_order(%w: !needle.cq<2, 128, [2, 64, 128]>, %t: i32) {
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 0, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  return
}

