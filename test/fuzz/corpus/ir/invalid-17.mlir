
func.func @engram_rank(%w: !needle.cq<2, 128, [64, 128]>, %t: i32) {
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 2>, heads = 1} : (!needle.cq<2, 128, [64, 128]>, i32, i32) -> tensor<128xf32>
  return
}

