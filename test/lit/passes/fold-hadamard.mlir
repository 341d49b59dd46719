// Every rotation, matmul and constant left in the output must be matched by a positive check
// below: the implicit CHECK-NOTs cover the whole output, not just what follows the last match.
// DEFINE: %{check} = FileCheck %s --enable-var-scope --implicit-check-not=needle.hadamard --implicit-check-not=needle.cq_matmul \
// DEFINE:   --implicit-check-not=needle.matmul --implicit-check-not=arith.constant
// RUN: needle-opt %s -split-input-file -needle-fold-hadamard | %{check}

// The checks can fail. The unchanged input fails in each case the pass rewrites (@shared,
// @cancel, @constant), at the first op that shows the fold missing, and nowhere else (@padded
// and @groups are already what the pass must leave).
// RUN: needle-opt %s -split-input-file | not %{check} --dump-input=never 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNFOLDED --implicit-check-not=error:
// Wrongly cancelling the padded pair, or sharing rotations of different groups (dropping the
// second rotation of @padded or of @groups), fails those cases.
// RUN: needle-opt %s -split-input-file -needle-fold-hadamard | sed -e '/needle.hadamard %0 /d' -e '/group = 64/d' \
// RUN:   | not %{check} --dump-input=never 2>&1 | FileCheck %s --check-prefix=WRONG --implicit-check-not=error:

// q, k, v and gate read the same value: one rotation serves all four.
// CHECK-LABEL: func.func @shared(
// CHECK-SAME: %[[S:[^:]+]]: tensor<128xf32>, %[[W:[^:]+]]: !needle.cq<2, 128, [6, 128]>)
// CHECK: %[[R:.+]] = needle.hadamard %[[S]] {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// CHECK: %[[Q:.+]] = needle.cq_matmul %[[W]], %[[R]] : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// CHECK: %[[K:.+]] = needle.cq_matmul %[[W]], %[[R]] : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// UNFOLDED: fold-hadamard.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: %[[V:.+]] = needle.cq_matmul %[[W]], %[[R]] : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// CHECK: %[[G:.+]] = needle.cq_matmul %[[W]], %[[R]] : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// CHECK: return %[[Q]], %[[K]], %[[V]], %[[G]] :
func.func @shared(%s: tensor<128xf32>, %w: !needle.cq<2, 128, [6, 128]>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %r1 = needle.hadamard %s {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %q = needle.cq_matmul %w, %r1 : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
  %r2 = needle.hadamard %s {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %k = needle.cq_matmul %w, %r2 : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
  %r3 = needle.hadamard %s {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %v = needle.cq_matmul %w, %r3 : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
  %r4 = needle.hadamard %s {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %g = needle.cq_matmul %w, %r4 : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
  return %q, %k, %v, %g : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}

// -----

// H·H = I: an engram row decoded with H and rotated again for the key matmul needs neither.
// CHECK-LABEL: func.func @cancel(
// CHECK-SAME: %[[T:[^:]+]]: i32, %[[TABLES:[^:]+]]: !needle.cq<2, 128, [2, 64, 128]>, %[[KEY:[^:]+]]: !needle.cq<2, 128, [6, 256]>)
// CHECK: %[[RAW:.+]] = needle.engram_gather %[[TABLES]], %[[T]], %[[T]] {heads = 1 : i64, orders = array<i64: 2, 3>}
// CHECK: %[[K:.+]] = needle.cq_matmul %[[KEY]], %[[RAW]] : (!needle.cq<2, 128, [6, 256]>, tensor<256xf32>) -> tensor<6xf32>
// UNFOLDED: fold-hadamard.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: return %[[K]] : tensor<6xf32>
func.func @cancel(%t: i32, %tables: !needle.cq<2, 128, [2, 64, 128]>, %key: !needle.cq<2, 128, [6, 256]>) -> tensor<6xf32> {
  %raw = needle.engram_gather %tables, %t, %t {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  %e = needle.hadamard %raw {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %er = needle.hadamard %e {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %k = needle.cq_matmul %key, %er : (!needle.cq<2, 128, [6, 256]>, tensor<256xf32>) -> tensor<6xf32>
  return %k : tensor<6xf32>
}

// -----

// Padding breaks H·H = I (the first rotation added zeros): both stay.
// CHECK-LABEL: func.func @padded(
// CHECK-SAME: %[[X:[^:]+]]: tensor<100xf32>, %[[M:[^:]+]]: tensor<6x128xf32>)
// CHECK: %[[A:.+]] = needle.hadamard %[[X]] {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>
// CHECK: %[[B:.+]] = needle.hadamard %[[A]] {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// WRONG: fold-hadamard.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: %[[Y:.+]] = needle.matmul %[[M]], %[[B]] : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
// CHECK: return %[[Y]] : tensor<6xf32>
func.func @padded(%x: tensor<100xf32>, %m: tensor<6x128xf32>) -> tensor<6xf32> {
  %a = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<128xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %y = needle.matmul %m, %b : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// Different group sizes are different rotations: not shared, not cancelled.
// CHECK-LABEL: func.func @groups(
// CHECK-SAME: %[[X:[^:]+]]: tensor<128xf32>)
// CHECK: %[[A:.+]] = needle.hadamard %[[X]] {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// CHECK: %[[B:.+]] = needle.hadamard %[[X]] {group = 64 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// WRONG: fold-hadamard.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: return %[[A]], %[[B]] : tensor<128xf32>, tensor<128xf32>
func.func @groups(%x: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %b = needle.hadamard %x {group = 64} : (tensor<128xf32>) -> tensor<128xf32>
  return %a, %b : tensor<128xf32>, tensor<128xf32>
}

// -----

// Rotating a constant is done at compile time: H e0 = (1/sqrt(8), ...).
// CHECK-LABEL: func.func @constant()
// CHECK: %[[C:.+]] = arith.constant dense<0.353553{{[0-9]*}}> : tensor<8xf32>
// UNFOLDED: fold-hadamard.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: expected string not found in input
// CHECK: return %[[C]] : tensor<8xf32>
func.func @constant() -> tensor<8xf32> {
  %c = arith.constant dense<[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<8xf32>
  %r = needle.hadamard %c {group = 8} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
