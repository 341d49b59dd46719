// Folders run in canonicalization: H·H = I and constant rotations.
// Every rotation and stateful op left in the output must be matched by a positive check below.
// DEFINE: %{check} = FileCheck %s --enable-var-scope --implicit-check-not=needle.hadamard --implicit-check-not=needle.causal_taps \
// DEFINE:   --implicit-check-not=arith.constant
// RUN: needle-opt %s -split-input-file -canonicalize | %{check}

// The checks can fail: the unchanged input fails in each case a folder changes, and nowhere else.
// RUN: needle-opt %s -split-input-file | not %{check} --dump-input=never 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNFOLDED --implicit-check-not=error:

// CHECK-LABEL: func.func @twice(
// CHECK-SAME: %[[X:[^:]+]]: tensor<256xf32>) -> tensor<256xf32>
// CHECK-NEXT: return %[[X]] : tensor<256xf32>
// UNFOLDED: canonicalize.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: {{.*}}
// CHECK-NEXT: }
func.func @twice(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = needle.hadamard %x {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  return %b : tensor<256xf32>
}

// -----

// CHECK-LABEL: func.func @unused_rotation(
// CHECK-SAME: %{{[^:]+}}: tensor<128xf32>) {
// CHECK-NEXT: return{{$}}
// UNFOLDED: canonicalize.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: {{.*}}
// CHECK-NEXT: }
func.func @unused_rotation(%x: tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  return
}

// -----

// Stateful ops are never dropped, even unused: they advance the session.
// CHECK-LABEL: func.func @stateful_kept(
// CHECK-SAME: %[[X:[^:]+]]: tensor<8xf32>, %[[T:[^:]+]]: tensor<3x8xf32>) {
// CHECK-NEXT: needle.causal_taps %[[X]], %[[T]] {stride = 1 : i64} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
// CHECK-NEXT: return{{$}}
func.func @stateful_kept(%x: tensor<8xf32>, %t: tensor<3x8xf32>) {
  %a = needle.causal_taps %x, %t {stride = 1} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
  return
}

// -----

// Rotating a constant folds to a constant: H e0 = (1/sqrt(8), ...).
// CHECK-LABEL: func.func @constant()
// CHECK-NEXT: %[[C:.+]] = arith.constant dense<0.353553{{[0-9]*}}> : tensor<8xf32>
// UNFOLDED: canonicalize.mlir:[[#@LINE-1]]:{{[0-9]+}}: error: {{.*}}: {{.*}}
// CHECK-NEXT: return %[[C]] : tensor<8xf32>
func.func @constant() -> tensor<8xf32> {
  %c = arith.constant dense<[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<8xf32>
  %r = needle.hadamard %c {group = 8} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Padding (the first rotation added zeros) and different groups break H·H = I: nothing folds.
// CHECK-LABEL: func.func @not_inverse(
// CHECK-SAME: %[[X:[^:]+]]: tensor<100xf32>, %[[Y:[^:]+]]: tensor<128xf32>)
// CHECK-NEXT: %[[A:.+]] = needle.hadamard %[[X]] {group = 128 : i64} : (tensor<100xf32>) -> tensor<128xf32>
// CHECK-NEXT: %[[B:.+]] = needle.hadamard %[[A]] {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// CHECK-NEXT: %[[C:.+]] = needle.hadamard %[[Y]] {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// CHECK-NEXT: %[[D:.+]] = needle.hadamard %[[C]] {group = 64 : i64} : (tensor<128xf32>) -> tensor<128xf32>
// CHECK-NEXT: return %[[B]], %[[D]] : tensor<128xf32>, tensor<128xf32>
func.func @not_inverse(%x: tensor<100xf32>, %y: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<128xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %c = needle.hadamard %y {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %d = needle.hadamard %c {group = 64} : (tensor<128xf32>) -> tensor<128xf32>
  return %b, %d : tensor<128xf32>, tensor<128xf32>
}

// -----

// A rotation whose constant result would pass kMaxFoldedElements (2^20 elements) stays in the
// IR: folding this splat of 2^24 would materialise 64 MiB (at 2^28, gigabytes).
// CHECK-LABEL: func.func @large_constant()
// CHECK-NEXT: %[[C:.+]] = arith.constant dense<1.000000e+00> : tensor<16777216xf32>
// CHECK-NEXT: %[[R:.+]] = needle.hadamard %[[C]] {group = 128 : i64} : (tensor<16777216xf32>) -> tensor<16777216xf32>
// CHECK-NEXT: return %[[R]] : tensor<16777216xf32>
func.func @large_constant() -> tensor<16777216xf32> {
  %c = arith.constant dense<1.0> : tensor<16777216xf32>
  %r = needle.hadamard %c {group = 128} : (tensor<16777216xf32>) -> tensor<16777216xf32>
  return %r : tensor<16777216xf32>
}
