// RUN: needle-opt %s -split-input-file -needle-fuse-cq-matmul | FileCheck %s

// A dequantized CQ weight feeding a matmul becomes one cq_matmul; no float weight is left.
// CHECK-LABEL: func.func @fuse
// CHECK-SAME: (%[[X:.*]]: tensor<128xf32>)
// CHECK: %[[W:.*]] = needle.weight "attn.q" block 0
// CHECK: needle.cq_matmul %[[W]], %[[X]] : (!needle.cq<2, 128, [6, 128]>, tensor<128xf32>) -> tensor<6xf32>
// CHECK-NOT: needle.cq_dequant
// CHECK-NOT: needle.matmul
func.func @fuse(%x: tensor<128xf32>) -> tensor<6xf32> {
  %w = needle.weight "attn.q" block 0 : !needle.cq<2, 128, [6, 128]>
  %d = needle.cq_dequant %w : (!needle.cq<2, 128, [6, 128]>) -> tensor<6x128xf32>
  %y = needle.matmul %d, %x : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// One dequantization read by two matmuls: both fused.
// CHECK-LABEL: func.func @two_users
// CHECK-COUNT-2: needle.cq_matmul
// CHECK-NOT: needle.cq_dequant
func.func @two_users(%x: tensor<128xf32>, %z: tensor<128xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %w = needle.weight "attn.k" block 2 : !needle.cq<4, 128, [6, 128]>
  %d = needle.cq_dequant %w : (!needle.cq<4, 128, [6, 128]>) -> tensor<6x128xf32>
  %a = needle.matmul %d, %x : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  %b = needle.matmul %d, %z : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %a, %b : tensor<6xf32>, tensor<6xf32>
}

// -----

// A float weight (scheme "none") stays a plain matmul.
// CHECK-LABEL: func.func @float_weight
// CHECK: needle.matmul
// CHECK-NOT: needle.cq_matmul
func.func @float_weight(%x: tensor<8xf32>) -> tensor<6xf32> {
  %w = needle.weight "attn.q" block 0 : tensor<6x8xf32>
  %y = needle.matmul %w, %x : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}
