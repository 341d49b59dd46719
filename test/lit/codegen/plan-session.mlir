// RUN: needle-opt %s -split-input-file -needle-plan-session | FileCheck %s
// The proof that these checks can fail: the unplanned input does not pass them.
// RUN: needle-opt %s -split-input-file | not FileCheck %s

// Scratch is reused by lifetime. Ops are numbered in program order (weight 0, gather 1, ...).
// Layout in bytes: header [0, 64); no state; the returned %s is an output at 64 (32 bytes,
// region ends at 128); scratch from 128 on: %row, live over ops 1-2, 512 bytes at +0; %x (2-3)
// overlaps %row's lifetime: +512; %y (3-4) starts after %row's last use, so it takes +0 again.
// Scratch needs 1024 bytes; the arena is 128 + 1024 = 1152.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 128 : i64, size = 1152 : i64, state_end = 64 : i64}
// CHECK: needle.cq_gather {{.*}} {needle.buffers = array<i64: 128>}
// CHECK-NEXT: needle.hadamard {{.*}} {group = 128 : i64, needle.buffers = array<i64: 640>}
// CHECK-NEXT: needle.unpad_rows {{.*}} {needle.buffers = array<i64: 128>, rows = 1 : i64, width = 8 : i64}
// CHECK-NEXT: needle.scale {{.*}} {factor = 2.000000e+00 : f32, needle.buffers = array<i64: 64>}
module attributes {needle.max_seq_len = 16 : i64} {
  func.func @step(%tok: i32, %pos: i32) -> tensor<8xf32> {
    %w = needle.weight "embed.weight" : !needle.cq<4, 128, [16, 8]>
    %row = needle.cq_gather %w, %tok : (!needle.cq<4, 128, [16, 8]>, i32) -> tensor<128xf32>
    %x = needle.hadamard %row {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
    %y = needle.unpad_rows %x {rows = 1 : i64, width = 8 : i64} : (tensor<128xf32>) -> tensor<8xf32>
    %s = needle.scale %y {factor = 2.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
    return %s : tensor<8xf32>
  }
}

// -----

// State: a local block's KV ring holds its window (8 positions), a global one max_seq_len (16).
// Two query heads of 4 share one kv head: a position's key is 4 floats and its value 8 (48
// bytes): 384 bytes at 64, then 768 at 448; state ends at 1216. The output %s (64 bytes) ends
// at 1280. Scratch from 1280: %local (ops 0-2) +0; the local kernel's scores (two heads' of 8
// positions: 16 floats, op 0) +64; %o (1-2) +64, since the scores died at op 0; the global
// kernel's scores (2 x 16 floats, op 1) +128. 1280 + 256 = 1536.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 1280 : i64, size = 1536 : i64, state_end = 1216 : i64}
// CHECK: needle.attention {{.*}}needle.buffers = array<i64: 1280>, needle.scratch = array<i64: 1344, 64>, needle.state = array<i64: 64, 384>, window = 8
// CHECK-NEXT: needle.attention {{.*}}needle.buffers = array<i64: 1344>, needle.scratch = array<i64: 1408, 128>, needle.state = array<i64: 448, 768>, window = 0
// CHECK-NEXT: needle.sigmoid_gate {{.*}}needle.buffers = array<i64: 1216>
module attributes {needle.max_seq_len = 16 : i64} {
  func.func @step(%tok: i32, %pos: i32, %q: tensor<8xf32>, %k: tensor<4xf32>, %v: tensor<8xf32>) -> tensor<16xf32> {
    %local = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 8 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    %o = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 0 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    %s = needle.sigmoid_gate %o, %local : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    return %s : tensor<16xf32>
  }
}

// -----

// The same module with max_seq_len 4 (needlec --max-seq 4): both rings shrink to 4 positions,
// 192 bytes each (64..256, 256..448); the output 448..512; scratch %local +0, scores 32 bytes
// (2 x 4 floats) +64, %o +64, scores +128, 160 bytes: 512 + 160 rounds up to 704.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 512 : i64, size = 704 : i64, state_end = 448 : i64}
// CHECK: needle.attention {{.*}}needle.buffers = array<i64: 512>, needle.scratch = array<i64: 576, 32>, needle.state = array<i64: 64, 192>, window = 8
// CHECK-NEXT: needle.attention {{.*}}needle.buffers = array<i64: 576>, needle.scratch = array<i64: 640, 32>, needle.state = array<i64: 256, 192>, window = 0
module attributes {needle.max_seq_len = 4 : i64} {
  func.func @step(%tok: i32, %pos: i32, %q: tensor<8xf32>, %k: tensor<4xf32>, %v: tensor<8xf32>) -> tensor<16xf32> {
    %local = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 8 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    %o = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 0 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    %s = needle.sigmoid_gate %o, %local : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    return %s : tensor<16xf32>
  }
}

// -----

// A block works on its operand's lanes in place and yields into its results: lanes_init's
// buffer is also the block's argument, what it yields and its lanes result; the cell is the
// second lane mean's buffer. Both results are returned: outputs at 128 (128 bytes of lanes) and
// 256 (32-byte cell), after the taps' state (stride·(count-1) = 2 past inputs of 8 floats, 64
// bytes at 64). Scratch from 320: %m (ops 2-4) +0, %z (op 4, unused) +64: 320 + 96 rounds to 448.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 320 : i64, size = 448 : i64, state_end = 128 : i64}
// CHECK: needle.lanes_init {{.*}}needle.buffers = array<i64: 128>
// CHECK-NEXT: needle.block {{.*}}needle.buffers = array<i64: 128, 256>
// CHECK: needle.lane_mean {{.*}}needle.buffers = array<i64: 320>
// CHECK: needle.causal_taps {{.*}}needle.buffers = array<i64: 384>, needle.state = array<i64: 64, 64>
// CHECK-NEXT: needle.lane_mean {{.*}}needle.buffers = array<i64: 256>
module attributes {needle.max_seq_len = 16 : i64} {
  func.func @step(%tok: i32, %pos: i32, %x: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
    %lanes = needle.lanes_init %x : (tensor<8xf32>) -> tensor<4x8xf32>
    %l1, %cell = needle.block %lanes, %tok, %pos {id = 0 : i64, source = 0 : i64, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
    ^bb0(%l: tensor<4x8xf32>, %t: i32, %p: i32):
      %m = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      %taps = needle.weight "attn.q_taps" block 0 : tensor<3x8xf32>
      %z = needle.causal_taps %m, %taps {stride = 1 : i64} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
      %c = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      needle.yield %l, %c : tensor<4x8xf32>, tensor<8xf32>
    }
    return %l1, %cell : tensor<4x8xf32>, tensor<8xf32>
  }
}

// -----

// A head keeps its pooling state (rows x probes slots of d + 2 floats: 1 x 2 x 10 = 80 bytes at
// 64), but its output gets no buffer and it needs no scratch: the C interface computes it when
// asked, on its own stack (docs/codegen.md). The state ends at 192; the returned %x (32 bytes)
// is the only output, at 192, so outputs end at 256.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 256 : i64, size = 256 : i64, state_end = 192 : i64}
// CHECK: needle.head confidence({{.*}}) {eps = {{[^,]*}}, needle.state = array<i64: 64, 80>, pad = 0 : i64}
module attributes {needle.max_seq_len = 16 : i64} {
  func.func @step(%tok: i32, %pos: i32) -> (tensor<8xf32>, tensor<1xf32>) {
    %e = needle.weight "embed" : tensor<16x8xf32>
    %x = needle.gather %e, %tok : (tensor<16x8xf32>, i32) -> tensor<8xf32>
    %probes = needle.weight "confidence.probes" : tensor<1x2x8xf32>
    %gain = needle.weight "confidence.gain" : tensor<1x2xf32>
    %query = needle.weight "confidence.query" : tensor<2x8xf32>
    %bias = needle.weight "confidence.row_bias" : tensor<2x1x2xf32>
    %proj = needle.weight "confidence.proj" : tensor<1x16xf32>
    %b = needle.weight "confidence.bias" : tensor<1xf32>
    %conf = needle.head confidence(%x) token %tok weights(%probes, %gain, %query, %bias, %proj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, i32, tensor<1x2x8xf32>, tensor<1x2xf32>, tensor<2x8xf32>, tensor<2x1x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
    return %x, %conf : tensor<8xf32>, tensor<1xf32>
  }
}

// -----

// needle.token_log (a rung of an object of several depths, docs/c-interface.md "Every rung in
// one object"): 16 positions of 4 bytes (64) right after the header, so the state starts at 128:
// the local ring of 8 x 48 = 384 bytes at 128 (to 512). The output %o (64 bytes) at 512 ends at
// 576; scratch: the kernel's scores (2 x 8 floats, 64 bytes) at 576, to 640.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 576 : i64, size = 640 : i64, state_end = 512 : i64, token_log = 64 : i64}
// CHECK: needle.attention {{.*}}needle.buffers = array<i64: 512>, needle.scratch = array<i64: 576, 64>, needle.state = array<i64: 128, 384>, window = 8
module attributes {needle.max_seq_len = 16 : i64, needle.token_log} {
  func.func @step(%tok: i32, %pos: i32, %q: tensor<8xf32>, %k: tensor<4xf32>, %v: tensor<8xf32>) -> tensor<16xf32> {
    %o = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 8 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    return %o : tensor<16xf32>
  }
}

// -----

// needle.max_rollback = 3 (needlec --max-rollback 3, docs/c-interface.md "Taking tokens back"):
// the local ring keeps 3 positions past its window, 11 x 48 = 528 bytes at 64 (to 640); the
// global ring already holds max_seq_len, 768 bytes at 640; state ends at 1408. The output %s
// (64 bytes) ends at 1472. Scratch from 1472: %local +0; the local kernel's scores (2 x 11
// floats, 88 bytes) +64; %o +64; the global kernel's scores (2 x 16 floats) +128: 1472 + 256.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 1472 : i64, size = 1728 : i64, state_end = 1408 : i64}
// CHECK: needle.attention {{.*}}needle.buffers = array<i64: 1472>, needle.scratch = array<i64: 1536, 88>, needle.state = array<i64: 64, 528>, window = 8
// CHECK-NEXT: needle.attention {{.*}}needle.buffers = array<i64: 1536>, needle.scratch = array<i64: 1600, 128>, needle.state = array<i64: 640, 768>, window = 0
module attributes {needle.max_seq_len = 16 : i64, needle.max_rollback = 3 : i64} {
  func.func @step(%tok: i32, %pos: i32, %q: tensor<8xf32>, %k: tensor<4xf32>, %v: tensor<8xf32>) -> tensor<16xf32> {
    %local = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 8 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    %o = needle.attention %q, %k, %v {heads = 2 : i64, kv_heads = 1 : i64, window = 0 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
    %s = needle.sigmoid_gate %o, %local : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    return %s : tensor<16xf32>
  }
}

// -----

// With needle.max_rollback = 3 the taps' ring keeps 2 + 3 past inputs of 8 floats (160 bytes at
// 64, to 256) and the head its pooling state and 3 snapshots of it (4 x 80 = 320 bytes at 256);
// state ends at 576. Outputs: the lanes at 576 (128 bytes), the cell at 704 (to 768). Scratch
// from 768: %m +0, %z +64: 768 + 96 rounds to 896.
// CHECK-LABEL: module attributes
// CHECK-SAME: needle.arena = {align = 64 : i64, outputs_end = 768 : i64, size = 896 : i64, state_end = 576 : i64}
// CHECK: needle.causal_taps {{.*}}needle.state = array<i64: 64, 160>
// CHECK: needle.head confidence({{.*}}) {eps = {{[^,]*}}, needle.state = array<i64: 256, 320>, pad = 0 : i64}
module attributes {needle.max_seq_len = 16 : i64, needle.max_rollback = 3 : i64} {
  func.func @step(%tok: i32, %pos: i32, %x: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>) {
    %lanes = needle.lanes_init %x : (tensor<8xf32>) -> tensor<4x8xf32>
    %l1, %cell = needle.block %lanes, %tok, %pos {id = 0 : i64, source = 0 : i64, global = false} : (tensor<4x8xf32>, i32, i32) -> (tensor<4x8xf32>, tensor<8xf32>) {
    ^bb0(%l: tensor<4x8xf32>, %t: i32, %p: i32):
      %m = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      %taps = needle.weight "attn.q_taps" block 0 : tensor<3x8xf32>
      %z = needle.causal_taps %m, %taps {stride = 1 : i64} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
      %c = needle.lane_mean %l : (tensor<4x8xf32>) -> tensor<8xf32>
      needle.yield %l, %c : tensor<4x8xf32>, tensor<8xf32>
    }
    %probes = needle.weight "confidence.probes" : tensor<1x2x8xf32>
    %gain = needle.weight "confidence.gain" : tensor<1x2xf32>
    %query = needle.weight "confidence.query" : tensor<2x8xf32>
    %bias = needle.weight "confidence.row_bias" : tensor<2x1x2xf32>
    %proj = needle.weight "confidence.proj" : tensor<1x16xf32>
    %b = needle.weight "confidence.bias" : tensor<1xf32>
    %conf = needle.head confidence(%cell) token %tok weights(%probes, %gain, %query, %bias, %proj, %b) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, i32, tensor<1x2x8xf32>, tensor<1x2xf32>, tensor<2x8xf32>, tensor<2x1x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
    return %l1, %cell, %conf : tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>
  }
}
