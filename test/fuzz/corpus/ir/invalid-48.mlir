
func.func @head_bias(%x: tensor<8xf32>, %t: i32, %pr: tensor<2x2x8xf32>, %g: tensor<2x2xf32>, %q: tensor<2x8xf32>, %rb: tensor<2x2x2xf32>, %pj: tensor<1x16xf32>) {
  %r = needle.head confidence(%x, %x) token %t weights(%pr, %g, %q, %rb, %pj) {pad = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xf32>, i32, tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x8xf32>, tensor<2x2x2xf32>, tensor<1x16xf32>) -> tensor<1xf32>
  return
}

