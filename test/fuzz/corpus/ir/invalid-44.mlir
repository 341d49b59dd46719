
func.func @yield_outside(%l: tensor<4x8xf32>, %c: tensor<8xf32>) {
  needle.yield %l, %c : tensor<4x8xf32>, tensor<8xf32>
}

