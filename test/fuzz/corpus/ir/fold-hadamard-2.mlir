
func.func @padded(%x: tensor<100xf32>, %m: tensor<6x128xf32>) -> tensor<6xf32> {
  %a = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<128xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %y = needle.matmul %m, %b : (tensor<6x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return %y : tensor<6xf32>
}

