// Every dequantization, float matmul and cq_matmul left in the output must be matched by a
// positive check below: the implicit CHECK-NOTs cover the whole output, not just what follows
// the last match.
// DEFINE: %{check} = FileCheck %s --enable-var-scope --implicit-check-not=needle.cq_dequant \
// DEFINE:   --implicit-check-not=needle.matmul --implicit-check-not=needle.cq_matmul
// RUN: needle-opt %s -split-input-file -needle-fuse-cq-matmul | %{check}

// The checks can fail. The unchanged input fails in each case the pass rewrites, at the fused op,
// and nowhere else (@float_weight is already what the pass must leave).
// RUN: needle-opt %s -split-input-file | not %{check} --dump-input=never 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNFUSED --implicit-check-not=error:
// A fused output that keeps the dequantization before its cq_matmul fails on the dequantization.
// RUN: needle-opt %s -split-input-file -needle-fuse-cq-matmul \
// RUN:   | sed -e 's/%1 = needle.cq_matmul/%9 = needle.cq_dequant %0\n    &/' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=KEPT --implicit-check-not=error:
// KEPT: error: IMPLICIT-{{CHECK}}-NOT: excluded string found in input
// KEPT-NEXT: -implicit-check-not='needle.cq_dequant'
// KEPT: error: IMPLICIT-{{CHECK}}-NOT: excluded string found in input
// KEPT-NEXT: -implicit-check-not='needle.cq_dequant'
// Both uses reading the same input fails @two_users at its second cq_matmul.
// RUN: needle-opt %s -split-input-file -needle-fuse-cq-matmul | sed -e 's/%0, %arg1 :/%0, %arg0 :/' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=SWAPPED --implicit-check-not=error:

// A dequantized CQ weight feeding a matmul becomes one cq_matmul; no float weight is left.
// CHECK-LABEL: func.func @fuse(
// CHECK-SAME: %[[X:[^:]+]]: tensor<128xf32>) -> tensor<6xf32>
// CHECK: %[[W:.+]] = needle.weight "attn.q" block 0 : !needle.cq<2, 128, [6, 128]>
// CHECK: %[[Y:.+]] = needle.cq_matmul %[[W]], %[[X]] : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// UNFUSED: fuse-cq-matmul.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: return %[[Y]] : tensor<6xf32>
func.func @fuse(%x: tensor<128xf32>) -> tensor<6xf32> {
  %w = needle.weight "attn.q" block 0 : !needle.cq<2, 128, [6, 128]>
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 128]>) -> tensor<6x128xf32>
  %y = needle.matmul %d, %x : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// One dequantization read by two matmuls: both fused, each reading the CQ weight and its own input.
// CHECK-LABEL: func.func @two_users(
// CHECK-SAME: %[[X:[^:]+]]: tensor<128xf32>, %[[Z:[^:]+]]: tensor<128xf32>)
// CHECK: %[[W:.+]] = needle.weight "attn.k" block 2 : !needle.cq<4, 128, [6, 128]>
// CHECK: %[[A:.+]] = needle.cq_matmul %[[W]], %[[X]] : (!needle.cq<4, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// UNFUSED: fuse-cq-matmul.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: %[[B:.+]] = needle.cq_matmul %[[W]], %[[Z]] : (!needle.cq<4, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// SWAPPED: fuse-cq-matmul.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: return %[[A]], %[[B]] : tensor<6xf32>, tensor<6xf32>
func.func @two_users(%x: tensor<128xf32>, %z: tensor<128xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %w = needle.weight "attn.k" block 2 : !needle.cq<4, 128, [6, 128]>
  %d = needle.cq_dequant %w : (!needle.cq<4, 128, [6, 128]>) -> tensor<6x128xf32>
  %a = needle.matmul %d, %x : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  %b = needle.matmul %d, %z : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %a, %b : tensor<6xf32>, tensor<6xf32>
}

// -----

// A float weight (scheme "none") stays a plain matmul.
// CHECK-LABEL: func.func @float_weight(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8xf32>) -> tensor<6xf32>
// CHECK: %[[W:.+]] = needle.weight "attn.q" block 0 : tensor<6x8xf32>
// CHECK: %[[Y:.+]] = needle.matmul %[[W]], %[[X]] : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6xf32>
// CHECK: return %[[Y]] : tensor<6xf32>
func.func @float_weight(%x: tensor<8xf32>) -> tensor<6xf32> {
  %w = needle.weight "attn.q" block 0 : tensor<6x8xf32>
  %y = needle.matmul %w, %x : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}
