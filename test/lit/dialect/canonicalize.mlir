// Folders run in canonicalization: H·H = I and constant rotations.
// RUN: needle-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:.*]]: tensor<256xf32>)
// CHECK-NEXT: return %[[X]]
func.func @twice(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = needle.hadamard %x {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  return %b : tensor<256xf32>
}

// -----

// CHECK-LABEL: func.func @unused_rotation
// CHECK-NOT: needle.hadamard
func.func @unused_rotation(%x: tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  return
}

// -----

// Stateful ops are never dropped, even unused: they advance the session.
// CHECK-LABEL: func.func @stateful_kept
// CHECK: needle.causal_taps
func.func @stateful_kept(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  %a = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  return
}
