// Every needle op prints and parses back to itself.
// RUN: needle-opt %s | needle-opt | FileCheck %s

// CHECK-LABEL: func.func @quant
func.func @quant(%x: tensor<100xf32>, %tok: i32) -> (tensor<6xf32>, tensor<6xf32>, tensor<128xf32>) {
  // CHECK: needle.weight "attn.q" block 3 : !needle.cq<2, 128, [6, 100]>
  %w = needle.weight "attn.q" block 3 : !needle.cq<2, 128, [6, 100]>
  // CHECK: needle.hadamard %{{.*}} {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>
  %r = needle.hadamard %x {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>
  // CHECK: needle.cq_dequant %{{.*}} : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x128xf32>
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x128xf32>
  // CHECK: needle.matmul
  %y = needle.matmul %d, %r : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  // CHECK: needle.cq_matmul %{{.*}}, %{{.*}} : (!needle.cq<2, 128, [6, 100]>, tensor<128xf32>) -> tensor<6xf32>
  %z = needle.cq_matmul %w, %r : (!needle.cq<2, 128, [6, 100]>, tensor<128xf32>) -> tensor<6xf32>
  // CHECK: needle.weight "embed.weight" : !needle.cq<4, 128, [256, 128]>
  %e = needle.weight "embed.weight" : !needle.cq<4, 128, [256, 128]>
  // CHECK: needle.cq_gather
  %row = needle.cq_gather %e, %tok : (!needle.cq<4, 128, [256, 128]>, i32) -> tensor<128xf32>
  return %y, %z, %row : tensor<6xf32>, tensor<6xf32>, tensor<128xf32>
}

// CHECK-LABEL: func.func @engram
func.func @engram(%tok: i32, %pos: i32, %u: tensor<128xf32>, %taps: tensor<4x128xf32>) -> tensor<128xf32> {
  %t = needle.weight "engram.tables" block 1 : !needle.cq<2, 128, [2, 64, 64]>
  // CHECK: needle.engram_gather %{{.*}}, %{{.*}}, %{{.*}} {heads = 1 : i64, orders = array<i64: 2, 3>}
  %raw = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
  %dec = needle.hadamard %raw {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  // CHECK: needle.unpad_rows %{{.*}} {rows = 2 : i64, width = 64 : i64}
  %e = needle.unpad_rows %dec {rows = 2, width = 64} : (tensor<256xf32>) -> tensor<128xf32>
  // CHECK: needle.causal_taps %{{.*}}, %{{.*}} {stride = 3 : i64}
  %v = needle.causal_taps %e, %taps {stride = 3} : (tensor<128xf32>, tensor<4x128xf32>) -> tensor<128xf32>
  // CHECK: needle.engram_gate
  %x = needle.engram_gate %u, %e, %v {eps = 1.0e-6 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  return %x : tensor<128xf32>
}

// CHECK-LABEL: func.func @lanes
func.func @lanes(%x: tensor<8xf32>, %pre: tensor<4xf32>, %res: tensor<16xf32>, %a: tensor<3xf32>,
                 %bres: tensor<4x4xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<32xf32>) {
  // CHECK: needle.scale %{{.*}} {factor = 2.000000e+00 : f32}
  %s = needle.scale %x {factor = 2.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK: needle.lanes_init
  %l = needle.lanes_init %s : (tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: needle.lane_norm
  %nx = needle.lane_norm %l {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<32xf32>
  // CHECK: needle.mhc_gates {{.*}} {position = 5 : i64}
  %hpre, %hpost, %mix = needle.mhc_gates %pre, %pre, %res, %a, %pre, %pre, %bres {position = 5} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
  // CHECK: needle.lane_read
  %u = needle.lane_read %l, %hpre : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8xf32>
  // CHECK: needle.lane_write
  %l2 = needle.lane_write %l, %mix, %hpost, %y : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: needle.lane_mean
  %c = needle.lane_mean %l2 : (tensor<4x8xf32>) -> tensor<8xf32>
  return %l2, %c, %nx : tensor<4x8xf32>, tensor<8xf32>, tensor<32xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<16xf32>, %k: tensor<8xf32>, %v: tensor<12xf32>, %n: tensor<4xf32>, %pos: i32,
                     %g: tensor<24xf32>) -> tensor<24xf32> {
  // CHECK: needle.zc_norm %{{.*}}, %{{.*}} {eps = 9.99999997E-7 : f32, heads = 4 : i64}
  %qn = needle.zc_norm %q, %n {heads = 4, eps = 1.0e-6 : f32} : (tensor<16xf32>, tensor<4xf32>) -> tensor<16xf32>
  // CHECK: needle.rope %{{.*}}, %{{.*}} {heads = 4 : i64, theta = 1.000000e+04 : f64}
  %qr = needle.rope %qn, %pos {heads = 4, theta = 10000.0 : f64} : (tensor<16xf32>, i32) -> tensor<16xf32>
  // CHECK: needle.attention %{{.*}}, %{{.*}}, %{{.*}} {heads = 4 : i64, kv_heads = 2 : i64, window = 8 : i64}
  %o = needle.attention %qr, %k, %v {heads = 4, kv_heads = 2, window = 8} : (tensor<16xf32>, tensor<8xf32>, tensor<12xf32>) -> tensor<24xf32>
  // CHECK: needle.sigmoid_gate
  %go = needle.sigmoid_gate %o, %g : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>
  return %go : tensor<24xf32>
}

// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<6xf32>, %a: tensor<6xf32>, %n: tensor<6xf32>, %g: tensor<1xf32>, %wa: tensor<2x2xf32>,
               %wb: tensor<4x4xf32>, %d: tensor<8xf32>, %cv: tensor<6x8xf32>, %cu: tensor<8x8xf32>,
               %p: tensor<8xi32>) -> tensor<6xf32> {
  // CHECK: needle.residual_gate
  %x1 = needle.residual_gate %x, %a, %n, %g {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<1xf32>) -> tensor<6xf32>
  // CHECK: needle.kron_mlp
  %m = needle.kron_mlp %x1, %n, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  // CHECK: needle.block_update
  %y = needle.block_update %x1, %m, %x : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @structure
func.func @structure(%l: tensor<4x8xf32>, %tok: i32, %pos: i32, %x0: tensor<8xf32>) -> (tensor<1xf32>, tensor<3xf32>) {
  // CHECK: needle.block %{{.*}}, %{{.*}}, %{{.*}} {engram_site = 0 : i64, global = true, id = 1 : i64, source = 7 : i64}
  // CHECK: needle.yield
  %l2, %cell = needle.block %l, %tok, %pos {id = 1, source = 7, global = true, engram_site = 0} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%lanes: tensor<4x8xf32>, %t: i32, %p: i32):
    %tab = needle.weight "engram.tables" block 7 : !needle.cq<2, 128, [2, 64, 64]>
    %raw = needle.engram_gather %tab, %t, %p {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
    %c = needle.lane_mean %lanes : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %lanes, %c : tensor<4x8xf32>, tensor<8xf32>
  }
  // CHECK: needle.weight "confidence.probes" rows [7] : tensor<2x2x8xf32>
  %probes = needle.weight "confidence.probes" rows [7] : tensor<2x2x8xf32>
  %gain = needle.weight "confidence.gain" rows [7] : tensor<2x2xf32>
  %query = needle.weight "confidence.query" : tensor<2x8xf32>
  %bias = needle.weight "confidence.row_bias" rows [7] : tensor<2x2x2xf32>
  %proj = needle.weight "confidence.proj" : tensor<1x16xf32>
  %b = needle.weight "confidence.bias" : tensor<1xf32>
  %eproj = needle.weight "embedding_head.proj" : tensor<3x16xf32>
  // CHECK: needle.head confidence(%{{.*}}, %{{.*}}) token %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {eps = 9.99999997E-7 : f32, pad = 0 : i64}
  %conf = needle.head confidence(%x0, %cell) token %tok weights(%probes, %gain, %query, %bias, %proj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  // CHECK: needle.head embedding(%{{.*}}, %{{.*}}) token %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {eps
  %emb = needle.head embedding(%x0, %cell) token %tok weights(%probes, %gain, %query, %bias, %eproj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<3x16xf32>) -> tensor<3xf32>
  return %conf, %emb : tensor<1xf32>, tensor<3xf32>
}
