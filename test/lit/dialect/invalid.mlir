// Every verifier rejects bad IR with a precise message.
// RUN: needle-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{CQ bits must be 2, 3 or 4, got 5}}
func.func @bits(%w: !needle.cq<5, 128, [4, 128]>) { return }

// -----

// expected-error @+1 {{CQ group must be a power of two >= 8, got 100}}
func.func @group(%w: !needle.cq<2, 100, [4, 128]>) { return }

// -----

// expected-error @+1 {{CQ dimensions must be positive}}
func.func @dims(%w: !needle.cq<2, 128, [0, 128]>) { return }

// -----

func.func @weight_name() {
  // expected-error @+1 {{'needle.weight' op needs a weight name}}
  %w = needle.weight "" : tensor<4xf32>
  return
}

// -----

func.func @weight_rows() {
  // expected-error @+1 {{'needle.weight' op rows must be non-negative source block ids, got -1}}
  %w = needle.weight "confidence.gain" rows [3, -1] : tensor<3x2xf32>
  return
}

// -----

func.func @weight_block() {
  // expected-error @+1 {{'needle.weight' op block must be non-negative, got -2}}
  %w = needle.weight "attn_norm" block -2 : tensor<4xf32>
  return
}

// -----

func.func @dequant(%w: !needle.cq<2, 128, [6, 100]>) {
  // expected-error @+1 {{'needle.cq_dequant' op result has shape [6, 100], expected [6, 128]}}
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 100]>) -> tensor<6x100xf32>
  return
}

// -----

func.func @matmul(%m: tensor<6x128xf32>, %x: tensor<100xf32>) {
  // expected-error @+1 {{'needle.matmul' op input has length 100, expected 128}}
  %y = needle.matmul %m, %x : (tensor<6x128xf32>, tensor<100xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @cq_matmul_unrotated(%w: !needle.cq<2, 128, [6, 100]>, %x: tensor<100xf32>) {
  // expected-error @+1 {{'needle.cq_matmul' op input (rotated, padded to whole groups) has length 100, expected 128}}
  %y = needle.cq_matmul %w, %x : (!needle.cq<2, 128, [6, 100]>, tensor<100xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @cq_matmul_rows(%w: !needle.cq<2, 128, [6, 128]>, %x: tensor<128xf32>) {
  // expected-error @+1 {{'needle.cq_matmul' op result has length 5, expected 6}}
  %y = needle.cq_matmul %w, %x : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @cq_matmul_table(%w: !needle.cq<2, 128, [2, 6, 128]>, %x: tensor<128xf32>) {
  // expected-error @+1 {{'needle.cq_matmul' op weight must be a CQ matrix}}
  %y = needle.cq_matmul %w, %x : (!needle.cq<2, 128, [2, 6, 128]>, tensor<128xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @hadamard_group(%x: tensor<128xf32>) {
  // expected-error @+1 {{'needle.hadamard' op group must be a power of two up to 268435456, got 96}}
  %r = needle.hadamard %x {group = 96} : (tensor<128xf32>) -> tensor<128xf32>
  return
}

// -----

func.func @hadamard_padding(%x: tensor<100xf32>) {
  // expected-error @+1 {{'needle.hadamard' op result has length 100, expected 128}}
  %r = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<100xf32>
  return
}

// -----

func.func @dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'needle.hadamard' op operand #0 must be statically shaped 1D tensor of 32-bit float values, but got 'tensor<?xf32>'}}
  %r = needle.hadamard %x {group = 128} : (tensor<?xf32>) -> tensor<128xf32>
  return
}

// -----

func.func @gather(%w: !needle.cq<4, 128, [256, 64]>, %t: i32) {
  // expected-error @+1 {{'needle.cq_gather' op result has length 64, expected 128}}
  %r = needle.cq_gather %w, %t : (!needle.cq<4, 128, [256, 64]>, i32) -> tensor<64xf32>
  return
}

// -----

func.func @engram_tables(%w: !needle.cq<2, 128, [3, 64, 128]>, %t: i32) {
  // expected-error @+1 {{'needle.engram_gather' op has 3 tables, orders x heads is 2}}
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [3, 64, 128]>, i32, i32) -> tensor<384xf32>
  return
}

// -----

func.func @engram_order(%w: !needle.cq<2, 128, [2, 64, 128]>, %t: i32) {
  // expected-error @+1 {{'needle.engram_gather' op every order must be positive, got 0}}
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 0, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  return
}

// -----

func.func @engram_rank(%w: !needle.cq<2, 128, [64, 128]>, %t: i32) {
  // expected-error @+1 {{'needle.engram_gather' op tables must be [tables, slots, sub_dim]}}
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 2>, heads = 1} : (!needle.cq<2, 128, [64, 128]>, i32, i32) -> tensor<128xf32>
  return
}

// -----

func.func @unpad(%x: tensor<256xf32>) {
  // expected-error @+1 {{'needle.unpad_rows' op input of length 256 is not 3 rows of at least 64}}
  %r = needle.unpad_rows %x {rows = 3, width = 64} : (tensor<256xf32>) -> tensor<192xf32>
  return
}

// -----

func.func @lanes(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{'needle.lane_mean' op lanes must be [4, d_model], got 'tensor<3x8xf32>'}}
  %r = needle.lane_mean %x : (tensor<3x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @lanes_init(%x: tensor<8xf32>) {
  // expected-error @+1 {{'needle.lanes_init' op result has shape [4, 4], expected [4, 8]}}
  %r = needle.lanes_init %x : (tensor<8xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @lane_norm(%l: tensor<4x8xf32>) {
  // expected-error @+1 {{'needle.lane_norm' op result has length 8, expected 32}}
  %r = needle.lane_norm %l {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @mhc(%p: tensor<4xf32>, %r: tensor<12xf32>, %a: tensor<3xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'needle.mhc_gates' op res has length 12, expected 16}}
  %0:3 = needle.mhc_gates %p, %p, %r, %a, %p, %p, %b {position = 0} : (tensor<4xf32>, tensor<4xf32>, tensor<12xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
  return
}

// -----

func.func @mhc_position(%p: tensor<4xf32>, %r: tensor<16xf32>, %a: tensor<3xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'needle.mhc_gates' op position must be non-negative, got -1}}
  %0:3 = needle.mhc_gates %p, %p, %r, %a, %p, %p, %b {position = -1} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
  return
}

// -----

func.func @lane_read(%l: tensor<4x8xf32>, %h: tensor<3xf32>) {
  // expected-error @+1 {{'needle.lane_read' op h_pre has length 3, expected 4}}
  %r = needle.lane_read %l, %h : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @lane_write(%l: tensor<4x8xf32>, %m: tensor<4x4xf32>, %h: tensor<4xf32>, %y: tensor<6xf32>) {
  // expected-error @+1 {{'needle.lane_write' op update has length 6, expected 8}}
  %r = needle.lane_write %l, %m, %h, %y : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<6xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @engram_gate(%u: tensor<8xf32>, %k: tensor<6xf32>) {
  // expected-error @+1 {{'needle.engram_gate' op requires the same type for all operands and results}}
  %r = needle.engram_gate %u, %k, %u {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<6xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @taps(%x: tensor<8xf32>, %t: tensor<3x6xf32>) {
  // expected-error @+1 {{'needle.causal_taps' op input has length 8, expected 6}}
  %r = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x6xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @taps_stride(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  // expected-error @+1 {{'needle.causal_taps' op stride must be positive, got 0}}
  %r = needle.causal_taps %x, %t {stride = 0} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @zc_heads(%x: tensor<10xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'needle.zc_norm' op input of length 10 does not split into 3 heads}}
  %r = needle.zc_norm %x, %s {heads = 3, eps = 1.0e-6 : f32} : (tensor<10xf32>, tensor<3xf32>) -> tensor<10xf32>
  return
}

// -----

func.func @zc_scale(%x: tensor<12xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'needle.zc_norm' op scale has length 3, expected 12}}
  %r = needle.zc_norm %x, %s {heads = 1, eps = 1.0e-6 : f32} : (tensor<12xf32>, tensor<3xf32>) -> tensor<12xf32>
  return
}

// -----

func.func @rope(%x: tensor<12xf32>, %p: i32) {
  // expected-error @+1 {{'needle.rope' op input of length 12 does not split into 4 heads of even size}}
  %r = needle.rope %x, %p {heads = 4, theta = 10000.0 : f64} : (tensor<12xf32>, i32) -> tensor<12xf32>
  return
}

// -----

func.func @rope_theta(%x: tensor<8xf32>, %p: i32) {
  // expected-error @+1 {{'needle.rope' op theta must be positive}}
  %r = needle.rope %x, %p {heads = 2, theta = 0.0 : f64} : (tensor<8xf32>, i32) -> tensor<8xf32>
  return
}

// -----

func.func @attention_kv(%q: tensor<12xf32>, %k: tensor<8xf32>) {
  // expected-error @+1 {{'needle.attention' op kv_heads 2 does not divide heads 3}}
  %r = needle.attention %q, %k, %k {heads = 3, kv_heads = 2, window = 0} : (tensor<12xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<12xf32>
  return
}

// -----

func.func @attention_key(%q: tensor<16xf32>, %k: tensor<6xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'needle.attention' op key has length 6, expected 8}}
  %r = needle.attention %q, %k, %v {heads = 4, kv_heads = 2, window = 0} : (tensor<16xf32>, tensor<6xf32>, tensor<8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<16xf32>, %k: tensor<8xf32>) {
  // expected-error @+1 {{'needle.attention' op window must be non-negative, got -4}}
  %r = needle.attention %q, %k, %k {heads = 4, kv_heads = 2, window = -4} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @sigmoid_gate(%x: tensor<8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'needle.sigmoid_gate' op requires the same type for all operands and results}}
  %r = needle.sigmoid_gate %x, %g : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @residual_gate(%x: tensor<8xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{'needle.residual_gate' op gate has length 2, expected 1}}
  %r = needle.residual_gate %x, %x, %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @mlp_factors(%x: tensor<6xf32>, %wa: tensor<2x2xf32>, %wb: tensor<2x2xf32>, %d: tensor<8xf32>, %cv: tensor<6x8xf32>, %cu: tensor<8x8xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{'needle.kron_mlp' op factors 2 x 2 do not multiply to the MLP width 8}}
  %m = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  return
}

// -----

func.func @mlp_width(%x: tensor<6xf32>, %wa: tensor<2x2xf32>, %wb: tensor<3x3xf32>, %d: tensor<6xf32>, %cv: tensor<6x8xf32>, %cu: tensor<8x6xf32>, %p: tensor<6xi32>) {
  // expected-error @+1 {{'needle.kron_mlp' op MLP width 6 must be a power of two >= d_model 6}}
  %m = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6xi32>, tensor<6xi32>) -> tensor<6xf32>
  return
}

// -----

func.func @mlp_cond(%x: tensor<6xf32>, %wa: tensor<2x2xf32>, %wb: tensor<4x4xf32>, %d: tensor<8xf32>, %cv: tensor<6x4xf32>, %cu: tensor<8x8xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{'needle.kron_mlp' op cond_v has shape [6, 4], expected [6, 8]}}
  %m = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x4xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  return
}

// -----

func.func @block_update(%x: tensor<8xf32>, %u: tensor<4xf32>) {
  // expected-error @+1 {{'needle.block_update' op requires the same type for all operands and results}}
  %r = needle.block_update %x, %x, %u : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @block_ids(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op id and source must be non-negative}}
  %l2, %c = needle.block %l, %t, %t {id = -1, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %a, %m : tensor<4x8xf32>, tensor<8xf32>
  }
  return
}

// -----

func.func @block_args(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op body must take (lanes, token, position) of the op's operand types}}
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32):
    %m = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %a, %m : tensor<4x8xf32>, tensor<8xf32>
  }
  return
}

// -----

func.func @yield_outside(%l: tensor<4x8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'needle.yield' op expects parent op 'needle.block'}}
  needle.yield %l, %c : tensor<4x8xf32>, tensor<8xf32>
}

// -----

func.func @head_kind(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x2x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<1x16xf32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{custom op 'needle.head' head kind must be confidence or embedding, got router}}
  %r = needle.head router(%x, %x) token %t weights(%pr, %g, %q, %rb, %pj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @head_cells(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x2x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<1x16xf32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{'needle.head' op has 1 cells but 2 head rows; each cell (x0, then one per block) needs its row}}
  %r = needle.head confidence(%x) token %t weights(%pr, %g, %q, %rb, %pj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @head_rows(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x2x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<1x16xf32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{'needle.head' op has 3 cells but 2 head rows; each cell (x0, then one per block) needs its row}}
  %r = needle.head confidence(%x, %x, %x) token %t weights(%pr, %g, %q, %rb, %pj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @head_bias(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x2x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<1x16xf32>) {
  // expected-error @+1 {{'needle.head' op confidence needs a bias}}
  %r = needle.head confidence(%x, %x) token %t weights(%pr, %g, %q, %rb, %pj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @head_gain(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x2x8xf32>, %g: tensor<2x3xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<3x16xf32>) {
  // expected-error @+1 {{'needle.head' op gain has shape [2, 3], expected [2, 2]}}
  %r = needle.head embedding(%x, %x) token %t weights(%pr, %g, %q, %rb, %pj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x3xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<3x16xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @gather_rank(%w: !needle.cq<4, 128, [2, 256, 128]>, %t: i32) {
  // expected-error @+1 {{'needle.cq_gather' op table must be a CQ matrix}}
  %r = needle.cq_gather %w, %t : (!needle.cq<4, 128, [2, 256, 128]>, i32) -> tensor<128xf32>
  return
}

// -----

func.func @engram_no_orders(%w: !needle.cq<2, 128, [2, 64, 128]>, %t: i32) {
  // expected-error @+1 {{'needle.engram_gather' op needs at least one order}}
  %r = needle.engram_gather %w, %t, %t {orders = array<i64>, heads = 1} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  return
}

// -----

func.func @engram_heads(%w: !needle.cq<2, 128, [2, 64, 128]>, %t: i32) {
  // expected-error @+1 {{'needle.engram_gather' op heads must be positive, got 0}}
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 2, 3>, heads = 0} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  return
}

// -----

func.func @engram_result(%w: !needle.cq<2, 128, [2, 64, 64]>, %t: i32) {
  // expected-error @+1 {{'needle.engram_gather' op result has length 128, expected 256}}
  %r = needle.engram_gather %w, %t, %t {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 64]>, i32, i32) -> tensor<128xf32>
  return
}

// -----

func.func @unpad_rows(%x: tensor<256xf32>) {
  // expected-error @+1 {{'needle.unpad_rows' op rows must be positive, got 0}}
  %r = needle.unpad_rows %x {rows = 0, width = 64} : (tensor<256xf32>) -> tensor<128xf32>
  return
}

// -----

func.func @scale(%x: tensor<8xf32>) {
  // expected-error @+1 {{'needle.scale' op requires the same type for all operands and results}}
  %r = needle.scale %x {factor = 2.0 : f32} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_result(%m: tensor<6x8xf32>, %x: tensor<8xf32>) {
  // expected-error @+1 {{'needle.matmul' op result has length 5, expected 6}}
  %y = needle.matmul %m, %x : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @attention_split(%q: tensor<15xf32>, %k: tensor<8xf32>) {
  // expected-error @+1 {{'needle.attention' op query and value must split evenly into heads}}
  %r = needle.attention %q, %k, %k {heads = 4, kv_heads = 2, window = 0} : (tensor<15xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @block_site(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op engram_site must be non-negative}}
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false, engram_site = -1} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %a, %m : tensor<4x8xf32>, tensor<8xf32>
  }
  return
}

// -----

func.func @block_result(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op failed to verify that all of {lanes, result} have same type}}
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x6xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %a, %m : tensor<4x8xf32>, tensor<8xf32>
  }
  return
}

// -----

// A block's body is verified before the block reads it: a foreign terminator fails first.
func.func @block_terminator(%l: tensor<4x8xf32>, %t: i32) {
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    // expected-error @+1 {{'func.return' op expects parent op 'func.func'}}
    func.return
  }
  return
}

// -----

func.func @block_yield(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op body yields types that differ from the op's results}}
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_norm %a {eps = 1.0e-6 : f32} : (tensor<4x8xf32>) -> tensor<32xf32>
    %n = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    %w = needle.lanes_init %m : (tensor<32xf32>) -> tensor<4x32xf32>
    needle.yield %w, %n : tensor<4x32xf32>, tensor<8xf32>
  }
  return
}

// -----

func.func @head_probes(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<3x16xf32>) {
  // expected-error @+1 {{'needle.head' op probes must be [rows, probes, d_model]}}
  %r = needle.head embedding(%x, %x) token %t weights(%pr, %g, %q, %rb, %pj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<3x16xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @taps_none(%x: tensor<8xf32>, %t: tensor<0x8xf32>) {
  // expected-error @+1 {{'needle.causal_taps' op the number of taps must be positive, got 0}}
  %r = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<0x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @global_window(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op is global but its attention has a window}}
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = true} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    %o = needle.attention %m, %m, %m {heads = 2, kv_heads = 2, window = 4} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    needle.yield %a, %m : tensor<4x8xf32>, tensor<8xf32>
  }
  return
}

// -----

func.func @site_without_engram(%l: tensor<4x8xf32>, %t: i32) {
  // expected-error @+1 {{'needle.block' op has an engram_site but no engram_gather}}
  %l2, %c = needle.block %l, %t, %t {id = 0, source = 0, global = false, engram_site = 0} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: i32, %p: i32):
    %m = needle.lane_mean %a : (tensor<4x8xf32>) -> tensor<8xf32>
    needle.yield %a, %m : tensor<4x8xf32>, tensor<8xf32>
  }
  return
}

// -----

// Operands and results the ODS traits tie together (AllTypesMatch).

func.func @residual_gate_update(%x: tensor<8xf32>, %a: tensor<6xf32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'needle.residual_gate' op failed to verify that all of {input, update, norm, result} have same type}}
  %r = needle.residual_gate %x, %a, %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<6xf32>, tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @residual_gate_norm(%x: tensor<8xf32>, %n: tensor<6xf32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'needle.residual_gate' op failed to verify that all of {input, update, norm, result} have same type}}
  %r = needle.residual_gate %x, %x, %n, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<6xf32>, tensor<1xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @residual_gate_result(%x: tensor<8xf32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'needle.residual_gate' op failed to verify that all of {input, update, norm, result} have same type}}
  %r = needle.residual_gate %x, %x, %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<1xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @taps_result(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  // expected-error @+1 {{'needle.causal_taps' op failed to verify that all of {input, result} have same type}}
  %r = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @zc_result(%x: tensor<8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'needle.zc_norm' op failed to verify that all of {input, result} have same type}}
  %r = needle.zc_norm %x, %s {heads = 1, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<8xf32>, %p: i32) {
  // expected-error @+1 {{'needle.rope' op failed to verify that all of {input, result} have same type}}
  %r = needle.rope %x, %p {heads = 2, theta = 10000.0 : f64} : (tensor<8xf32>, i32) -> tensor<16xf32>
  return
}

// -----

func.func @lane_write_result(%l: tensor<4x8xf32>, %m: tensor<4x4xf32>, %h: tensor<4xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'needle.lane_write' op failed to verify that all of {lanes, result} have same type}}
  %r = needle.lane_write %l, %m, %h, %y : (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @mlp_norm(%x: tensor<6xf32>, %n: tensor<8xf32>, %wa: tensor<2x2xf32>, %wb: tensor<4x4xf32>, %d: tensor<8xf32>, %cv: tensor<6x8xf32>, %cu: tensor<8x8xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{'needle.kron_mlp' op failed to verify that all of {input, norm, result} have same type}}
  %m = needle.kron_mlp %x, %n, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<6xf32>
  return
}

// -----

func.func @mlp_result(%x: tensor<6xf32>, %wa: tensor<2x2xf32>, %wb: tensor<4x4xf32>, %d: tensor<8xf32>, %cv: tensor<6x8xf32>, %cu: tensor<8x8xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{'needle.kron_mlp' op failed to verify that all of {input, norm, result} have same type}}
  %m = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %d, %d, %d, %d, %d, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xf32>
  return
}

// -----

// Statically shaped tensors only: a matrix, lanes, a head tensor and a weight.

func.func @matrix_dynamic(%m: tensor<?x128xf32>, %x: tensor<128xf32>) {
  // expected-error @+1 {{'needle.matmul' op operand #0 must be statically shaped 2D tensor of 32-bit float values, but got 'tensor<?x128xf32>'}}
  %y = needle.matmul %m, %x : (tensor<?x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @lanes_dynamic(%l: tensor<4x?xf32>) {
  // expected-error @+1 {{'needle.lane_mean' op operand #0 must be statically shaped 2D tensor of 32-bit float values, but got 'tensor<4x?xf32>'}}
  %r = needle.lane_mean %l : (tensor<4x?xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @probes_dynamic(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x?x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<1x16xf32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{'needle.head' op operand #3 must be statically shaped tensor of 32-bit float values, but got 'tensor<2x?x8xf32>'}}
  %r = needle.head confidence(%x, %x) token %t weights(%pr, %g, %q, %rb, %pj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x?x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @weight_dynamic() {
  // expected-error @+1 {{'needle.weight' op result #0 must be CQ-quantized weight tensor or statically shaped tensor of 32-bit float values or statically shaped tensor of 32-bit signless integer values, but got 'tensor<?x4xf32>'}}
  %w = needle.weight "attn.q" block 0 : tensor<?x4xf32>
  return
}

// -----

func.func @kron_mlp_dynamic_permutation(%x: tensor<8xf32>, %wa: tensor<2x2xf32>, %wb: tensor<4x4xf32>, %n: tensor<8xf32>, %cv: tensor<8x8xf32>, %cu: tensor<8x8xf32>, %p: tensor<?xi32>) -> tensor<8xf32> {
  // expected-error @+1 {{'needle.kron_mlp' op operand #15 must be statically shaped 1D tensor of 32-bit signless integer values, but got 'tensor<?xi32>'}}
  %r = needle.kron_mlp %x, %x, %wa, %wa, %wa, %wb, %wb, %wb, %n, %n, %n, %n, %n, %cv, %cu, %p, %p {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @gather_wrong_length(%e: tensor<256x128xf32>, %tok: i32) -> tensor<64xf32> {
  // expected-error @+1 {{'needle.gather' op result has length 64, expected 128}}
  %r = needle.gather %e, %tok : (tensor<256x128xf32>, i32) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// Float engram rows are not padded: 2 tables of 64 give 128 values, not 256.
func.func @float_engram_padded(%t: tensor<2x64x64xf32>, %tok: i32, %pos: i32) -> tensor<256xf32> {
  // expected-error @+1 {{'needle.engram_gather' op result has length 256, expected 128}}
  %r = needle.engram_gather %t, %tok, %pos {orders = array<i64: 2, 3>, heads = 1} : (tensor<2x64x64xf32>, i32, i32) -> tensor<256xf32>
  return %r : tensor<256xf32>
}
