
func.func @gather(%w: !needle.cq<4, 128, [256, 64]>, %t: i32) {
  %r = needle.cq_gather %w, %t : (!needle.cq<4, 128, [256, 64]>, i32) -> tensor<64xf32>
  return
}

