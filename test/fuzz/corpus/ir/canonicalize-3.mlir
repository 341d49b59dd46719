
func.func @constant() -> tensor<8xf32> {
  %c = arith.constant dense<[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<8xf32>
  %r = needle.hadamard %c {group = 8} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

