
func.func @not_inverse(%x: tensor<100xf32>, %y: tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>) {
  %a = needle.hadamard %x {group = 128} : (tensor<100xf32>) -> tensor<128xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %c = needle.hadamard %y {group = 128} : (tensor<128xf32>) -> tensor<128xf32>
  %d = needle.hadamard %c {group = 64} : (tensor<128xf32>) -> tensor<128xf32>
  return %b, %d : tensor<128xf32>, tensor<128xf32>
}
