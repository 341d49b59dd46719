




module attributes {needle.ladder_order = array<i64: 0, 2, 1>} {
  func.func @step(%l0: tensor<4x8xf32>, %tok: i32, %pos: i32, %x0: tensor<8xf32>) -> (tensor<8xf32>, tensor<1xf32>) {
    %l1, %c1 = needle.block %l0, %tok, %pos {id = 0, source = 4, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
    ^bb0(%l: tensor<4x8xf32>, %t: i32, %p: i32):
      %c = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      needle.yield %l, %c : tensor<4x8xf32>, tensor<8xf32>
    }
    %l2, %c2 = needle.block %l1, %tok, %pos {id = 1, source = 6, global = false, engram_site = 0} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
    ^bb0(%l: tensor<4x8xf32>, %t: i32, %p: i32):
    %tab = needle.weight "engram.tables" block 6 : !needle.cq<2, 128, [2, 64, 64]>
    %raw = needle.engram_gather %tab, %t, %p {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
      %c = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      needle.yield %l, %c : tensor<4x8xf32>, tensor<8xf32>
    }
    %l3, %c3 = needle.block %l2, %tok, %pos {id = 2, source = 9, global = true, engram_site = 1} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
    ^bb0(%l: tensor<4x8xf32>, %t: i32, %p: i32):
    %tab = needle.weight "engram.tables" block 9 : !needle.cq<2, 128, [2, 64, 64]>
    %raw = needle.engram_gather %tab, %t, %p {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
      %pre = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      %v4 = needle.weight "mhc.b_pre" block 9 : tensor<4xf32>
      %v16 = needle.weight "mhc.phi_res_out" block 9 : tensor<16xf32>
      %a = needle.weight "mhc.a" block 9 : tensor<3xf32>
      %bres = needle.weight "mhc.b_res" block 9 : tensor<4x4xf32>
      %hpre, %hpost, %mix = needle.mhc_gates %v4, %v4, %v16, %a, %v4, %v4, %bres {position = 2} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
      %n = needle.weight "attn_norm" block 9 : tensor<8xf32>
      %s = needle.zc_norm %pre, %n {heads = 1, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      %l4 = needle.lane_write %l, %mix, %hpost, %s : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %c = needle.lane_mean %l4 : (tensor<4x8xf32>) -> tensor<8xf32>
      needle.yield %l4, %c : tensor<4x8xf32>, tensor<8xf32>
    }
    %m = needle.lane_mean %l3 : (tensor<4x8xf32>) -> tensor<8xf32>
    %probes = needle.weight "confidence.probes" rows [4, 6, 9] : tensor<4x2x8xf32>
    %gain = needle.weight "confidence.gain" rows [4, 6, 9] : tensor<4x2xf32>
    %query = needle.weight "confidence.query" : tensor<2x8xf32>
    %rb = needle.weight "confidence.row_bias" rows [4, 6, 9] : tensor<2x4x2xf32>
    %proj = needle.weight "confidence.proj" : tensor<1x16xf32>
    %b = needle.weight "confidence.bias" : tensor<1xf32>
    %conf = needle.head confidence(%x0, %c1, %c2, %c3) token %tok weights(%probes, %gain, %query, %rb, %proj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, i32, tensor<4x2x8xf32>, tensor<4x2xf32>, tensor<2x8xf32>, tensor<2x4x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
    return %m, %conf : tensor<8xf32>, tensor<1xf32>
  }
}
