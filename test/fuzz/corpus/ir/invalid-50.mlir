
func.func @gather_rank(%w: !needle.cq<4, 128, [2, 256, 128]>, %t: i32) {
  %r = needle.cq_gather %w, %t : (!needle.cq<4, 128, [2, 256, 128]>, i32) -> tensor<128xf32>
  return
}

