

func.func @matrix_dynamic(%m: tensor<?x128xf32>, %x: tensor<128xf32>) {
  %y = needle.matmul %m, %x : (tensor<?x128xf32>, tensor<128xf32>) -> tensor<6xf32>
  return
}

