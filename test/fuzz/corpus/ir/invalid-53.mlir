
func.func @engram_result(%w: !needle.cq<2, 128, [2, 64, 64]>, %t: i32) {
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<128xf32>
  return
}

