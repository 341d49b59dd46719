
func.func @matmul_result(%m: tensor<6x8xf32>, %x: tensor<8xf32>) {
  %y = needle.matmul %m, %x : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<5xf32>
  return
}

