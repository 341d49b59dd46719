

func.func @twice(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = needle.hadamard %x {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  %b = needle.hadamard %a {group = 128} : (tensor<256xf32>) -> tensor<256xf32>
  return %b : tensor<256xf32>
}

