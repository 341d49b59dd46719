
func.func @matmul(%m: tensor<6x128xf32>, %x: tensor<100xf32>) {
  %y = needle.matmul %m, %x : (tensor<6x128xf32>, tensor<100xf32>) -> tensor<6xf32>
  return
}

