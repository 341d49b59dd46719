// RUN: needle-opt %s -split-input-file -needle-fold-hadamard | FileCheck %s

// q, k, v and gate read the same value: one rotation serves all four.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: (%[[S:.*]]: tensor<128xf32>
// CHECK: %[[R:.*]] = needle.hadamard %[[S]]
// CHECK-NOT: needle.hadamard
// CHECK-COUNT-4: needle.cq_matmul %{{.*}}, %[[R]]
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
// CHECK-LABEL: func.func @cancel
// CHECK: %[[RAW:.*]] = needle.engram_gather
// CHECK-NOT: needle.hadamard
// CHECK: needle.cq_matmul %{{.*}}, %[[RAW]]
func.func @cancel(%t: i32, %tables: !needle.cq<2, 128, [2, 64, 128]>, %key: !needle.cq<2, 128, [6, 256]>) -> tensor<6xf32> {
  %raw = needle.engram_gather %tables, %t, %t {orders = array<i64: 2, 3>, heads = 1} : (!needle.cq<2, 128, [2, 64, 128]>, i32, i32) -> tensor<256xf32>
  %e = needle.hadamard %raw {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %er = needle.hadamard %e {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %k = needle.cq_matmul %key, %er : (!needle.cq<2, 128, [6, 256]>, tensor<256xf32>) -> tensor<6xf32>
  return %k : tensor<6xf32>
}

// -----

// Padding breaks H·H = I (the first rotation added zeros): both stay.
// CHECK-LABEL: func.func @padded
// CHECK-COUNT-2: needle.hadamard
func.func @padded(%x: tensor<100xf32>, %m: tensor<6x128xf32>) -> tensor<6xf32> {
  %a = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<128xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %y = needle.matmul %m, %b : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// Different group sizes are different rotations: not shared, not cancelled.
// CHECK-LABEL: func.func @groups
// CHECK-COUNT-2: needle.hadamard
func.func @groups(%x: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %b = needle.hadamard %x {group = 64} : (tensor<128xf32>) -> tensor<128xf32>
  return %a, %b : tensor<128xf32>, tensor<128xf32>
}

// -----

// Rotating a constant is done at compile time: H e0 = (1/sqrt(8), ...).
// CHECK-LABEL: func.func @constant
// CHECK: arith.constant dense<0.353553{{[0-9]*}}> : tensor<8xf32>
// CHECK-NOT: needle.hadamard
func.func @constant() -> tensor<8xf32> {
  %c = arith.constant dense<[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<8xf32>
  %r = needle.hadamard %c {group = 8} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
