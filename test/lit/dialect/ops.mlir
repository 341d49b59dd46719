// Every needle op prints and parses back to itself, from the custom and from the generic form.
// Each check is the op's whole printed line with every operand bound, and every line naming a
// needle op or type must be matched by one.
// DEFINE: %{check} = FileCheck %s --enable-var-scope --implicit-check-not=needle.
// RUN: needle-opt %s | needle-opt | %{check}
// RUN: needle-opt %s --mlir-print-op-generic | needle-opt | %{check}
// RUN: needle-opt %s | needle-opt --mlir-print-op-generic | needle-opt | %{check}

// The generic form spells the head kind as an enum attribute.
// RUN: needle-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// GENERIC-LABEL: sym_name = "structure"
// GENERIC: "needle.head"({{.*}}) <{{.*}}kind = #needle<head_kind confidence>,
// GENERIC: "needle.head"({{.*}}) <{{.*}}kind = #needle<head_kind embedding>,

// CHECK-LABEL: func.func @quant(
// CHECK-SAME: %[[X:[^:]+]]: tensor<100xf32>, %[[TOK:[^:]+]]: i32) -> (tensor<6xf32>, tensor<6xf32>, tensor<128xf32>) {
func.func @quant(%x: tensor<100xf32>, %tok: i32) -> (tensor<6xf32>, tensor<6xf32>, tensor<128xf32>) {
  // CHECK-NEXT: %[[W:.+]] = needle.weight "attn.q" block 3 : !needle.cq<2, 128, [6, 100]>{{$}}
  %w = needle.weight "attn.q" block 3 : !needle.cq<2, 128, [6, 100]>
  // CHECK-NEXT: %[[R:.+]] = needle.hadamard %[[X]] {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>{{$}}
  %r = needle.hadamard %x {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>
  // CHECK-NEXT: %[[D:.+]] = needle.cq_dequant %[[W]] : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x128xf32>{{$}}
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x128xf32>
  // CHECK-NEXT: %[[Y:.+]] = needle.matmul %[[D]], %[[R]] : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>{{$}}
  %y = needle.matmul %d, %r : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  // CHECK-NEXT: %[[Z:.+]] = needle.cq_matmul %[[W]], %[[R]] : (!needle.cq<2, 128, [6, 100]>, tensor<128xf32>) -> tensor<6xf32>{{$}}
  %z = needle.cq_matmul %w, %r : (!needle.cq<2, 128, [6, 100]>, tensor<128xf32>) -> tensor<6xf32>
  // CHECK-NEXT: %[[E:.+]] = needle.weight "embed.weight" : !needle.cq<4, 128, [256, 128]>{{$}}
  %e = needle.weight "embed.weight" : !needle.cq<4, 128, [256, 128]>
  // CHECK-NEXT: %[[ROW:.+]] = needle.cq_gather %[[E]], %[[TOK]] : (!needle.cq<4, 128, [256, 128]>, i32) -> tensor<128xf32>{{$}}
  %row = needle.cq_gather %e, %tok : (!needle.cq<4, 128, [256, 128]>, i32) -> tensor<128xf32>
  // CHECK-NEXT: return %[[Y]], %[[Z]], %[[ROW]] : tensor<6xf32>, tensor<6xf32>, tensor<128xf32>
  return %y, %z, %row : tensor<6xf32>, tensor<6xf32>, tensor<128xf32>
}

// CHECK-LABEL: func.func @engram(
// CHECK-SAME: %[[TOK:[^:]+]]: i32, %[[POS:[^:]+]]: i32, %[[U:[^:]+]]: tensor<128xf32>, %[[TAPS:[^:]+]]: tensor<4x128xf32>) -> tensor<128xf32> {
func.func @engram(%tok: i32, %pos: i32, %u: tensor<128xf32>, %taps: tensor<4x128xf32>) -> tensor<128xf32> {
  // CHECK-NEXT: %[[T:.+]] = needle.weight "engram.tables" block 1 : !needle.cq<2, 128, [2, 64, 64]>{{$}}
  %t = needle.weight "engram.tables" block 1 : !needle.cq<2, 128, [2, 64, 64]>
  // CHECK-NEXT: %[[RAW:.+]] = needle.engram_gather %[[T]], %[[TOK]], %[[POS]] {heads = 1 : i64, orders = array<i64: 2, 3>} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>{{$}}
  %raw = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
  // CHECK-NEXT: %[[DEC:.+]] = needle.hadamard %[[RAW]] {group = 128 : i64} : (tensor<256xf32>) -> tensor<256xf32>{{$}}
  %dec = needle.hadamard %raw {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  // CHECK-NEXT: %[[E:.+]] = needle.unpad_rows %[[DEC]] {rows = 2 : i64, width = 64 : i64} : (tensor<256xf32>) -> tensor<128xf32>{{$}}
  %e = needle.unpad_rows %dec {rows = 2, width = 64} : (tensor<256xf32>) -> tensor<128xf32>
  // CHECK-NEXT: %[[V:.+]] = needle.causal_taps %[[E]], %[[TAPS]] {stride = 3 : i64} : (tensor<128xf32>, tensor<4x128xf32>) -> tensor<128xf32>{{$}}
  %v = needle.causal_taps %e, %taps {stride = 3} : (tensor<128xf32>, tensor<4x128xf32>) -> tensor<128xf32>
  // CHECK-NEXT: %[[G:.+]] = needle.engram_gate %[[U]], %[[E]], %[[V]] {eps = 9.99999997E-7 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>{{$}}
  %g = needle.engram_gate %u, %e, %v {eps = 1.0e-6 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  // CHECK-NEXT: return %[[G]] : tensor<128xf32>
  return %g : tensor<128xf32>
}

// CHECK-LABEL: func.func @lanes(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8xf32>, %[[PRE:[^:]+]]: tensor<4xf32>, %[[POST:[^:]+]]: tensor<4xf32>, %[[RES:[^:]+]]: tensor<16xf32>, %[[A:[^:]+]]: tensor<3xf32>,
// CHECK-SAME: %[[BPRE:[^:]+]]: tensor<4xf32>, %[[BPOST:[^:]+]]: tensor<4xf32>, %[[BRES:[^:]+]]: tensor<4x4xf32>, %[[Y:[^:]+]]: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32xf32>) {
func.func @lanes(%x: tensor<8xf32>, %pre: tensor<4xf32>, %post: tensor<4xf32>, %res: tensor<16xf32>, %a: tensor<3xf32>,
                 %bpre: tensor<4xf32>, %bpost: tensor<4xf32>, %bres: tensor<4x4xf32>, %y: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32xf32>) {
  // CHECK-NEXT: %[[S:.+]] = needle.scale %[[X]] {factor = 2.000000e+00 : f32} : (tensor<8xf32>) -> tensor<8xf32>{{$}}
  %s = needle.scale %x {factor = 2.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %[[L:.+]] = needle.lanes_init %[[S]] : (tensor<8xf32>) -> tensor<4x8xf32>{{$}}
  %l = needle.lanes_init %s : (tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %[[NX:.+]] = needle.lane_norm %[[L]] {eps = 9.99999997E-7 : f32} : (tensor<4x8xf32>) -> tensor<32xf32>{{$}}
  %nx = needle.lane_norm %l {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<32xf32>
  // CHECK-NEXT: %[[HPRE:[^,]+]], %[[HPOST:[^,]+]], %[[MIX:[^ ]+]] = needle.mhc_gates %[[PRE]], %[[POST]], %[[RES]], %[[A]], %[[BPRE]], %[[BPOST]], %[[BRES]] {position = 5 : i64}
  // CHECK-SAME: : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>){{$}}
  %hpre, %hpost, %mix = needle.mhc_gates %pre, %post, %res, %a, %bpre, %bpost, %bres {position = 5} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
  // CHECK-NEXT: %[[U:.+]] = needle.lane_read %[[L]], %[[HPRE]] : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8xf32>{{$}}
  %u = needle.lane_read %l, %hpre : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %[[L2:.+]] = needle.lane_write %[[L]], %[[MIX]], %[[HPOST]], %[[Y]] : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>{{$}}
  %l2 = needle.lane_write %l, %mix, %hpost, %y : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %[[C:.+]] = needle.lane_mean %[[L2]] : (tensor<4x8xf32>) -> tensor<8xf32>{{$}}
  %c = needle.lane_mean %l2 : (tensor<4x8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: return %[[L2]], %[[C]], %[[U]], %[[NX]] : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32xf32>
  return %l2, %c, %u, %nx : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<32xf32>
}

// CHECK-LABEL: func.func @attention(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<16xf32>, %[[K:[^:]+]]: tensor<8xf32>, %[[V:[^:]+]]: tensor<12xf32>, %[[N:[^:]+]]: tensor<4xf32>, %[[POS:[^:]+]]: i32, %[[G:[^:]+]]: tensor<24xf32>) -> tensor<24xf32> {
func.func @attention(%q: tensor<16xf32>, %k: tensor<8xf32>, %v: tensor<12xf32>, %n: tensor<4xf32>, %pos: i32,
                     %g: tensor<24xf32>) -> tensor<24xf32> {
  // CHECK-NEXT: %[[QN:.+]] = needle.zc_norm %[[Q]], %[[N]] {eps = 9.99999997E-7 : f32, heads = 4 : i64} : (tensor<16xf32>, tensor<4xf32>) -> tensor<16xf32>{{$}}
  %qn = needle.zc_norm %q, %n {heads = 4, eps = 1.0e-6 : f32} : (tensor<16xf32>, tensor<4xf32>) -> tensor<16xf32>
  // CHECK-NEXT: %[[QR:.+]] = needle.rope %[[QN]], %[[POS]] {heads = 4 : i64, theta = 1.000000e+04 : f64} : (tensor<16xf32>, i32) -> tensor<16xf32>{{$}}
  %qr = needle.rope %qn, %pos {heads = 4, theta = 10000.0 : f64} : (tensor<16xf32>, i32) -> tensor<16xf32>
  // CHECK-NEXT: %[[O:.+]] = needle.attention %[[QR]], %[[K]], %[[V]] {heads = 4 : i64, kv_heads = 2 : i64, window = 8 : i64} : (tensor<16xf32>, tensor<8xf32>, tensor<12xf32>) -> tensor<24xf32>{{$}}
  %o = needle.attention %qr, %k, %v {heads = 4, kv_heads = 2, window = 8} : (tensor<16xf32>, tensor<8xf32>, tensor<12xf32>) -> tensor<24xf32>
  // CHECK-NEXT: %[[GO:.+]] = needle.sigmoid_gate %[[O]], %[[G]] : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>{{$}}
  %go = needle.sigmoid_gate %o, %g : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>
  // CHECK-NEXT: return %[[GO]] : tensor<24xf32>
  return %go : tensor<24xf32>
}

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[X:[^:]+]]: tensor<6xf32>, %[[UPD:[^:]+]]: tensor<6xf32>, %[[N:[^:]+]]: tensor<6xf32>, %[[GATE:[^:]+]]: tensor<1xf32>,
// CHECK-SAME: %[[W1A:[^:]+]]: tensor<2x2xf32>, %[[W2A:[^:]+]]: tensor<2x2xf32>, %[[W3A:[^:]+]]: tensor<2x2xf32>,
// CHECK-SAME: %[[W1B:[^:]+]]: tensor<4x4xf32>, %[[W2B:[^:]+]]: tensor<4x4xf32>, %[[W3B:[^:]+]]: tensor<4x4xf32>,
// CHECK-SAME: %[[D1:[^:]+]]: tensor<8xf32>, %[[D2:[^:]+]]: tensor<8xf32>, %[[B2:[^:]+]]: tensor<8xf32>, %[[D3:[^:]+]]: tensor<8xf32>, %[[D4:[^:]+]]: tensor<8xf32>,
// CHECK-SAME: %[[CV:[^:]+]]: tensor<6x8xf32>, %[[CU:[^:]+]]: tensor<8x8xf32>, %[[P1:[^:]+]]: tensor<8xi32>, %[[P2:[^:]+]]: tensor<8xi32>) -> tensor<6xf32> {
func.func @mlp(%x: tensor<6xf32>, %upd: tensor<6xf32>, %n: tensor<6xf32>, %gate: tensor<1xf32>,
               %w1a: tensor<2x2xf32>, %w2a: tensor<2x2xf32>, %w3a: tensor<2x2xf32>,
               %w1b: tensor<4x4xf32>, %w2b: tensor<4x4xf32>, %w3b: tensor<4x4xf32>,
               %d1: tensor<8xf32>, %d2: tensor<8xf32>, %b2: tensor<8xf32>, %d3: tensor<8xf32>, %d4: tensor<8xf32>,
               %cv: tensor<6x8xf32>, %cu: tensor<8x8xf32>, %p1: tensor<8xi32>, %p2: tensor<8xi32>) -> tensor<6xf32> {
  // CHECK-NEXT: %[[X1:.+]] = needle.residual_gate %[[X]], %[[UPD]], %[[N]], %[[GATE]] {eps = 9.99999997E-7 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<1xf32>) -> tensor<6xf32>{{$}}
  %x1 = needle.residual_gate %x, %upd, %n, %gate {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<1xf32>) -> tensor<6xf32>
  // CHECK-NEXT: %[[M:.+]] = needle.kron_mlp %[[X1]], %[[N]], %[[W1A]], %[[W2A]], %[[W3A]], %[[W1B]], %[[W2B]], %[[W3B]], %[[D1]], %[[D2]], %[[B2]], %[[D3]], %[[D4]], %[[CV]], %[[CU]], %[[P1]], %[[P2]] {eps = 9.99999997E-7 : f32}
  // CHECK-SAME: : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>{{$}}
  %m = needle.kron_mlp %x1, %n, %w1a, %w2a, %w3a, %w1b, %w2b, %w3b, %d1, %d2, %b2, %d3, %d4, %cv, %cu, %p1, %p2 {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  // CHECK-NEXT: %[[Y:.+]] = needle.block_update %[[X1]], %[[M]], %[[X]] : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>{{$}}
  %y = needle.block_update %x1, %m, %x : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  // CHECK-NEXT: return %[[Y]] : tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @structure(
// CHECK-SAME: %[[L:[^:]+]]: tensor<4x8xf32>, %[[TOK:[^:]+]]: i32, %[[POS:[^:]+]]: i32, %[[X0:[^:]+]]: tensor<8xf32>) -> (tensor<1xf32>, tensor<3xf32>) {
func.func @structure(%l: tensor<4x8xf32>, %tok: i32, %pos: i32, %x0: tensor<8xf32>) -> (tensor<1xf32>, tensor<3xf32>) {
  // CHECK-NEXT: %[[L2:[^,]+]], %[[CELL:[^ ]+]] = needle.block %[[L]], %[[TOK]], %[[POS]] {engram_site = 0 : i64, global = true, id = 1 : i64, source = 7 : i64} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // CHECK-NEXT: ^bb0(%[[LANES:[^:]+]]: tensor<4x8xf32>, %[[T:[^:]+]]: i32, %[[P:[^:]+]]: i32):
  // CHECK-NEXT: %[[TAB:.+]] = needle.weight "engram.tables" block 7 : !needle.cq<2, 128, [2, 64, 64]>{{$}}
  // CHECK-NEXT: %{{.+}} = needle.engram_gather %[[TAB]], %[[T]], %[[P]] {heads = 1 : i64, orders = array<i64: 2, 3>} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>{{$}}
  // CHECK-NEXT: %[[C:.+]] = needle.lane_mean %[[LANES]] : (tensor<4x8xf32>) -> tensor<8xf32>{{$}}
  // CHECK-NEXT: needle.yield %[[LANES]], %[[C]] : tensor<4x8xf32>, tensor<8xf32>{{$}}
  // CHECK-NEXT: }
  %l2, %cell = needle.block %l, %tok, %pos {id = 1, source = 7, global = true, engram_site = 0} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%lanes: tensor<4x8xf32>, %t: i32, %p: i32):
    %tab = needle.weight "engram.tables" block 7 : !needle.cq<2, 128, [2, 64, 64]>
    %raw = needle.engram_gather %tab, %t, %p {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<256xf32>
    %c = needle.lane_mean %lanes : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %lanes, %c : tensor<4x8xf32>, tensor<8xf32>
  }
  // CHECK-NEXT: %[[PROBES:.+]] = needle.weight "confidence.probes" rows [7] : tensor<2x2x8xf32>{{$}}
  // CHECK-NEXT: %[[GAIN:.+]] = needle.weight "confidence.gain" rows [7] : tensor<2x2xf32>{{$}}
  // CHECK-NEXT: %[[QUERY:.+]] = needle.weight "confidence.query" : tensor<2x8xf32>{{$}}
  // CHECK-NEXT: %[[ROWBIAS:.+]] = needle.weight "confidence.row_bias" rows [7] : tensor<2x2x2xf32>{{$}}
  // CHECK-NEXT: %[[PROJ:.+]] = needle.weight "confidence.proj" : tensor<1x16xf32>{{$}}
  // CHECK-NEXT: %[[BIAS:.+]] = needle.weight "confidence.bias" : tensor<1xf32>{{$}}
  // CHECK-NEXT: %[[EPROJ:.+]] = needle.weight "embedding_head.proj" : tensor<3x16xf32>{{$}}
  %probes = needle.weight "confidence.probes" rows [7] : tensor<2x2x8xf32>
  %gain = needle.weight "confidence.gain" rows [7] : tensor<2x2xf32>
  %query = needle.weight "confidence.query" : tensor<2x8xf32>
  %bias = needle.weight "confidence.row_bias" rows [7] : tensor<2x2x2xf32>
  %proj = needle.weight "confidence.proj" : tensor<1x16xf32>
  %b = needle.weight "confidence.bias" : tensor<1xf32>
  %eproj = needle.weight "embedding_head.proj" : tensor<3x16xf32>
  // CHECK-NEXT: %[[CONF:.+]] = needle.head confidence(%[[X0]], %[[CELL]]) token %[[TOK]] weights(%[[PROBES]], %[[GAIN]], %[[QUERY]], %[[ROWBIAS]], %[[PROJ]], %[[BIAS]]) {eps = 9.99999997E-7 : f32, pad = 0 : i64}
  // CHECK-SAME: : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>{{$}}
  %conf = needle.head confidence(%x0, %cell) token %tok weights(%probes, %gain, %query, %bias, %proj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  // CHECK-NEXT: %[[EMB:.+]] = needle.head embedding(%[[X0]], %[[CELL]]) token %[[TOK]] weights(%[[PROBES]], %[[GAIN]], %[[QUERY]], %[[ROWBIAS]], %[[EPROJ]]) {eps = 9.99999997E-7 : f32, pad = 0 : i64}
  // CHECK-SAME: : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<3x16xf32>) -> tensor<3xf32>{{$}}
  %emb = needle.head embedding(%x0, %cell) token %tok weights(%probes, %gain, %query, %bias, %eproj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<3x16xf32>) -> tensor<3xf32>
  // CHECK-NEXT: return %[[CONF]], %[[EMB]] : tensor<1xf32>, tensor<3xf32>
  return %conf, %emb : tensor<1xf32>, tensor<3xf32>
}

// A model whose scheme keeps the embedding and the engram tables float: rows are gathered as
// stored (no rotation, no padding).
// CHECK-LABEL: func.func @float_tables(
// CHECK-SAME: %[[TOK:[^:]+]]: i32, %[[POS:[^:]+]]: i32) -> (tensor<128xf32>, tensor<128xf32>) {
func.func @float_tables(%tok: i32, %pos: i32) -> (tensor<128xf32>, tensor<128xf32>) {
  // CHECK-NEXT: %[[E:.+]] = needle.weight "embed.weight" : tensor<256x128xf32>{{$}}
  %e = needle.weight "embed.weight" : tensor<256x128xf32>
  // CHECK-NEXT: %[[ROW:.+]] = needle.gather %[[E]], %[[TOK]] : (tensor<256x128xf32>, i32) -> tensor<128xf32>{{$}}
  %row = needle.gather %e, %tok : (tensor<256x128xf32>, i32) -> tensor<128xf32>
  // CHECK-NEXT: %[[T:.+]] = needle.weight "engram.tables" block 1 : tensor<2x64x64xf32>{{$}}
  %t = needle.weight "engram.tables" block 1 : tensor<2x64x64xf32>
  // CHECK-NEXT: %[[R:.+]] = needle.engram_gather %[[T]], %[[TOK]], %[[POS]] {heads = 1 : i64, orders = array<i64: 2, 3>} : (tensor<2x64x64xf32>, i32, i32) -> tensor<128xf32>{{$}}
  %rows = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (tensor<2x64x64xf32>, i32, i32) -> tensor<128xf32>
  // CHECK-NEXT: return %[[ROW]], %[[R]] : tensor<128xf32>, tensor<128xf32>
  return %row, %rows : tensor<128xf32>, tensor<128xf32>
}
