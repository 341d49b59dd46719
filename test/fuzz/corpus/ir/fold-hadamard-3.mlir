
func.func @groups(%x: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %b = needle.hadamard %x {group = 64} : (tensor<128xf32>) -> tensor<128xf32>
  return %a, %b : tensor<128xf32>, tensor<128xf32>
}

