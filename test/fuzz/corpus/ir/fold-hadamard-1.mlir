
func.func @cancel(%t: i32, %tables: !needle.cq<2, 128, [2, 64, 128]>, %key: !needle.cq<2, 128, [6, 256]>) -> tensor<6xf32> {
  %raw = needle.engram_gather %tables, %t, %t {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  %e = needle.hadamard %raw {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %er = needle.hadamard %e {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %k = needle.cq_matmul %key, %er : (!needle.cq<2, 128, [6, 256]>, tensor<256xf32>) -> tensor<6xf32>
  return %k : tensor<6xf32>
}

