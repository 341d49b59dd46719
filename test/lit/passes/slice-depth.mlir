// Every block, weight and head left in the output must be matched by a positive check below:
// the implicit CHECK-NOTs cover the whole output, not just what follows the last match.
// DEFINE: %{check} = FileCheck %s --implicit-check-not=needle.block --implicit-check-not=needle.weight \
// DEFINE:   --implicit-check-not=needle.engram_gather --implicit-check-not=needle.mhc_gates --implicit-check-not=needle.head
// DEFINE: %{sliced} = needle-opt %s -needle-slice-depth=depth=2
// RUN: %{sliced} | %{check}

// Depth 3 is every block: the pass changes nothing. Depths outside 2..3 are errors.
// RUN: needle-opt %s -needle-slice-depth=depth=3 -o %t.full.mlir
// RUN: needle-opt %s -o %t.none.mlir
// RUN: diff %t.full.mlir %t.none.mlir
// RUN: not needle-opt %s -needle-slice-depth=depth=1 2>&1 | FileCheck %s --check-prefix=DEPTH1 --implicit-check-not=error:
// RUN: not needle-opt %s -needle-slice-depth=depth=4 2>&1 | FileCheck %s --check-prefix=DEPTH4 --implicit-check-not=error:

// The checks can fail. The unchanged input fails on its ladder order; a sliced output missing
// any one of the pass's other effects fails at the op that shows it.
// RUN: needle-opt %s | not %{check} --dump-input=never 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNSLICED --implicit-check-not=error:
// RUN: %{sliced} | sed -e 's/engram_site = 0 : i64, global = true, id = 1 :/engram_site = 1 : i64, global = true, id = 2 :/' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=IDS --implicit-check-not=error:
// RUN: %{sliced} | sed -e 's/position = 1 :/position = 2 :/' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=POSITION --implicit-check-not=error:
// RUN: %{sliced} | sed -e 's/"confidence.gain" rows \[4, 9\] : tensor<3x2xf32>/"confidence.gain" rows [4, 6, 9] : tensor<4x2xf32>/' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=ROWS --implicit-check-not=error:
// RUN: %{sliced} | sed -e 's/confidence(%arg3, %cell, %cell_1)/confidence(%arg3, %cell_1)/' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=CELLS --implicit-check-not=error:

// Three blocks with ladder order [0, 2, 1]: depth 2 keeps blocks 0 and 2; block 2 becomes
// block 1 (lane position 1, engram site 0), its weights and head row still name source 9.

// CHECK: module attributes {needle.ladder_order = array<i64: 0, 1>}
// UNSLICED: slice-depth.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK-NEXT: func.func @step(%[[L0:[^:]+]]: tensor<4x8xf32>, %[[TOK:[^:]+]]: i32, %[[POS:[^:]+]]: i32, %[[X0:[^:]+]]: tensor<8xf32>)
// CHECK-NEXT: %[[L1:[^,]+]], %[[C1:[^ ]+]] = needle.block %[[L0]], %[[TOK]], %[[POS]] {global = false, id = 0 : i64, source = 4 : i64}
// CHECK-NEXT: ^bb0(%[[A:[^:]+]]: tensor<4x8xf32>, %{{[^:]+}}: i32, %{{[^:]+}}: i32):
// CHECK-NEXT: %[[AM:.+]] = needle.lane_mean %[[A]] :
// CHECK-NEXT: needle.yield %[[A]], %[[AM]] :
// CHECK-NEXT: }
// CHECK-NEXT: %[[L2:[^,]+]], %[[C2:[^ ]+]] = needle.block %[[L1]], %[[TOK]], %[[POS]] {engram_site = 0 : i64, global = true, id = 1 : i64, source = 9 : i64}
// IDS: slice-depth.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK-NEXT: ^bb0(%[[B:[^:]+]]: tensor<4x8xf32>, %[[T:[^:]+]]: i32, %[[P:[^:]+]]: i32):
// CHECK-NEXT: %[[TAB:.+]] = needle.weight "engram.tables" block 9 : !needle.cq<2, 128, [2, 64, 64]>
// CHECK-NEXT: needle.engram_gather %[[TAB]], %[[T]], %[[P]] {heads = 1 : i64, orders = array<i64: 2, 3>}
// CHECK-NEXT: %[[PRE:.+]] = needle.lane_mean %[[B]] :
// CHECK-NEXT: %[[V4:.+]] = needle.weight "mhc.b_pre" block 9 : tensor<4xf32>
// CHECK-NEXT: %[[V16:.+]] = needle.weight "mhc.phi_res_out" block 9 : tensor<16xf32>
// CHECK-NEXT: %[[MA:.+]] = needle.weight "mhc.a" block 9 : tensor<3xf32>
// CHECK-NEXT: %[[BRES:.+]] = needle.weight "mhc.b_res" block 9 : tensor<4x4xf32>
// CHECK-NEXT: %{{[^,]+}}, %[[HPOST:[^,]+]], %[[MIX:[^ ]+]] = needle.mhc_gates %[[V4]], %[[V4]], %[[V16]], %[[MA]], %[[V4]], %[[V4]], %[[BRES]] {position = 1 : i64}
// POSITION: slice-depth.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK-NEXT: %[[NORM:.+]] = needle.weight "attn_norm" block 9 : tensor<8xf32>
// CHECK-NEXT: %[[S:.+]] = needle.zc_norm %[[PRE]], %[[NORM]] {eps = 9.99999997E-7 : f32, heads = 1 : i64}
// CHECK-NEXT: %[[L4:.+]] = needle.lane_write %[[B]], %[[MIX]], %[[HPOST]], %[[S]] :
// CHECK-NEXT: %[[BM:.+]] = needle.lane_mean %[[L4]] :
// CHECK-NEXT: needle.yield %[[L4]], %[[BM]] :
// CHECK-NEXT: }
// CHECK-NEXT: %[[M:.+]] = needle.lane_mean %[[L2]] : (tensor<4x8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[PROBES:.+]] = needle.weight "confidence.probes" rows [4, 9] : tensor<3x2x8xf32>
// CHECK-NEXT: %[[GAIN:.+]] = needle.weight "confidence.gain" rows [4, 9] : tensor<3x2xf32>
// ROWS: slice-depth.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK-NEXT: %[[QUERY:.+]] = needle.weight "confidence.query" : tensor<2x8xf32>
// CHECK-NEXT: %[[ROWBIAS:.+]] = needle.weight "confidence.row_bias" rows [4, 9] : tensor<2x3x2xf32>
// CHECK-NEXT: %[[PROJ:.+]] = needle.weight "confidence.proj" : tensor<1x16xf32>
// CHECK-NEXT: %[[BIAS:.+]] = needle.weight "confidence.bias" : tensor<1xf32>
// CHECK-NEXT: %[[CONF:.+]] = needle.head confidence(%[[X0]], %[[C1]], %[[C2]]) token %[[TOK]] weights(%[[PROBES]], %[[GAIN]], %[[QUERY]], %[[ROWBIAS]], %[[PROJ]], %[[BIAS]])
// CELLS: slice-depth.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK-SAME: {eps = 9.99999997E-7 : f32, pad = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, i32, tensor<3x2x8xf32>, tensor<3x2xf32>, tensor<2x8xf32>, tensor<2x3x2xf32>, tensor<1x16xf32>, tensor<1xf32>) -> tensor<1xf32>
// CHECK-NEXT: return %[[M]], %[[CONF]] : tensor<8xf32>, tensor<1xf32>

// The pass reports a bad depth at the module: needle-opt's contract line, then MLIR's diagnostic.
// DEPTH1: needle-opt: error: {{.*}}slice-depth.mlir:[[#@LINE+4]]:1: needle-slice-depth: depth 1 is outside 2..3{{$}}
// DEPTH1-NEXT: slice-depth.mlir:[[#@LINE+3]]:1: error: needle-slice-depth: depth 1 is outside 2..3{{$}}
// DEPTH4: needle-opt: error: {{.*}}slice-depth.mlir:[[#@LINE+2]]:1: needle-slice-depth: depth 4 is outside 2..3{{$}}
// DEPTH4-NEXT: slice-depth.mlir:[[#@LINE+1]]:1: error: needle-slice-depth: depth 4 is outside 2..3{{$}}
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
