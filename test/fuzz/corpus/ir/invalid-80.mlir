
func.func @gather_wrong_length(%e: tensor<256x128xf32>, %tok: i32) -> tensor<64xf32> {
  %r = needle.gather %e, %tok : (tensor<256x128xf32>, i32) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

