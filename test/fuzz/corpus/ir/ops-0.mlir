

func.func @quant(%x: tensor<100xf32>, %tok: i32) -> (tensor<6xf32>, tensor<6xf32>, tensor<128xf32>) {
  %w = needle.weight "attn.q" block 3 : !needle.cq<2, 128, [6, 100]>
  %r = needle.hadamard %x {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x128xf32>
  %y = needle.matmul %d, %r : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  %z = needle.cq_matmul %w, %r : (!needle.cq<2, 128, [6, 100]>, tensor<128xf32>) -> tensor<6xf32>
  %e = needle.weight "embed.weight" : !needle.cq<4, 128, [256, 128]>
  %row = needle.cq_gather %e, %tok : (!needle.cq<4, 128, [256, 128]>, i32) -> tensor<128xf32>
  return %y, %z, %row : tensor<6xf32>, tensor<6xf32>, tensor<128xf32>
}

func.func @engram(%tok: i32, %pos: i32, %u: tensor<128xf32>, %taps: tensor<4x128xf32>) -> tensor<128xf32> {
  %t = needle.weight "engram.tables" block 1 : !needle.cq<2, 128, [2, 64, 64]>
  %raw = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
  %dec = needle.hadamard %raw {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %e = needle.unpad_rows %dec {rows = 2, width = 64} : (tensor<256xf32>) -> tensor<128xf32>
  %v = needle.causal_taps %e, %taps {stride = 3} : (tensor<128xf32>, tensor<4x128xf32>) -> tensor<128xf32>
  %g = needle.engram_gate %u, %e, %v {eps = 1.0e-6 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  return %g : tensor<128xf32>
}

func.func @lanes(%x: tensor<8xf32>, %pre: tensor<4xf32>, %post: tensor<4xf32>, %res: tensor<16xf32>, %a: tensor<3xf32>,
                 %bpre: tensor<4xf32>, %bpost: tensor<4xf32>, %bres: tensor<4x4xf32>, %y: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32xf32>) {
  %s = needle.scale %x {factor = 2.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  %l = needle.lanes_init %s : (tensor<8xf32>) -> tensor<4x8xf32>
  %nx = needle.lane_norm %l {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<32xf32>
  %hpre, %hpost, %mix = needle.mhc_gates %pre, %post, %res, %a, %bpre, %bpost, %bres {position = 5} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
  %u = needle.lane_read %l, %hpre : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8xf32>
  %l2 = needle.lane_write %l, %mix, %hpost, %y : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %c = needle.lane_mean %l2 : (tensor<4x8xf32>) -> tensor<8xf32>
  return %l2, %c, %u, %nx : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32xf32>
}

func.func @attention(%q: tensor<16xf32>, %k: tensor<8xf32>, %v: tensor<12xf32>, %n: tensor<4xf32>, %pos: i32,
                     %g: tensor<24xf32>) -> tensor<24xf32> {
  %qn = needle.zc_norm %q, %n {heads = 4, eps = 1.0e-6 : f32} : (tensor<16xf32>, tensor<4xf32>) -> tensor<16xf32>
  %qr = needle.rope %qn, %pos {heads = 4, theta = 10000.0 : f64} : (tensor<16xf32>, i32) -> tensor<16xf32>
  %o = needle.attention %qr, %k, %v {heads = 4, kv_heads = 2, window = 8} : (tensor<16xf32>, tensor<8xf32>, tensor<12xf32>) -> tensor<24xf32>
  %go = needle.sigmoid_gate %o, %g : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>
  return %go : tensor<24xf32>
}

func.func @mlp(%x: tensor<6xf32>, %upd: tensor<6xf32>, %n: tensor<6xf32>, %gate: tensor<1xf32>,
               %w1a: tensor<2x2xf32>, %w2a: tensor<2x2xf32>, %w3a: tensor<2x2xf32>,
               %w1b: tensor<4x4xf32>, %w2b: tensor<4x4xf32>, %w3b: tensor<4x4xf32>,
               %d1: tensor<8xf32>, %d2: tensor<8xf32>, %b2: tensor<8xf32>, %d3: tensor<8xf32>, %d4: tensor<8xf32>,
               %cv: tensor<6x8xf32>, %cu: tensor<8x8xf32>, %p1: tensor<8xi32>, %p2: tensor<8xi32>) -> tensor<6xf32> {
  %x1 = needle.residual_gate %x, %upd, %n, %gate {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<1xf32>) -> tensor<6xf32>
  %m = needle.kron_mlp %x1, %n, %w1a, %w2a, %w3a, %w1b, %w2b, %w3b, %d1, %d2, %b2, %d3, %d4, %cv, %cu, %p1, %p2 {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  %y = needle.block_update %x1, %m, %x : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

func.func @structure(%l: tensor<4x8xf32>, %tok: i32, %pos: i32, %x0: tensor<8xf32>) -> (tensor<1xf32>, tensor<3xf32>) {
  %l2, %cell = needle.block %l, %tok, %pos {id = 1, source = 7, global = true, engram_site = 0} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%lanes: tensor<4x8xf32>, %t: i32, %p: i32):
    %tab = needle.weight "engram.tables" block 7 : !needle.cq<2, 128, [2, 64, 64]>
    %raw = needle.engram_gather %tab, %t, %p {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
    %c = needle.lane_mean %lanes : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %lanes, %c : tensor<4x8xf32>, tensor<8xf32>
  }
  %probes = needle.weight "confidence.probes" rows [7] : tensor<2x2x8xf32>
  %gain = needle.weight "confidence.gain" rows [7] : tensor<2x2xf32>
  %query = needle.weight "confidence.query" : tensor<2x8xf32>
  %bias = needle.weight "confidence.row_bias" rows [7] : tensor<2x2x2xf32>
  %proj = needle.weight "confidence.proj" : tensor<1x16xf32>
  %b = needle.weight "confidence.bias" : tensor<1xf32>
  %eproj = needle.weight "embedding_head.proj" : tensor<3x16xf32>
  %conf = needle.head confidence(%x0, %cell) token %tok weights(%probes, %gain, %query, %bias, %proj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  %emb = needle.head embedding(%x0, %cell) token %tok weights(%probes, %gain, %query, %bias, %eproj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<3x16xf32>) -> tensor<3xf32>
  return %conf, %emb : tensor<1xf32>, tensor<3xf32>
}

func.func @float_tables(%tok: i32, %pos: i32) -> (tensor<128xf32>, tensor<128xf32>) {
  %e = needle.weight "embed.weight" : tensor<256x128xf32>
  %row = needle.gather %e, %tok : (tensor<256x128xf32>, i32) -> tensor<128xf32>
  %t = needle.weight "engram.tables" block 1 : tensor<2x64x64xf32>
  %rows = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (tensor<2x64x64xf32>, i32, i32) -> tensor<128xf32>
  return %row, %rows : tensor<128xf32>, tensor<128xf32>
}
