

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

