module attributes {needle.codebooks = {cq2 = array<f32: -0.13317214, -0.039902091, 0.0400352813, 0.133460447>, cq4 = array<f32: -0.239531547, -0.180706054, -0.140957937, -0.109012552, -0.0815129652, -0.0565276518, -0.0329391509, -0.0101161096, 1.271080e-02, 0.0357079171, 0.0594582558, 0.0849770233, 0.112741619, 0.144696921, 1.842390e-01, 0.242273703>}, needle.ladder_order = array<i64: 0>, needle.max_seq_len = 16 : i64, needle.model = "small-imported.needle"} {
  func.func @step(%arg0: i32, %arg1: i32) -> (tensor<16xf32>, tensor<1xf32>, tensor<4xf32>) {
    %0 = needle.weight "embed.weight" : !needle.cq<4, 128, [16, 128]>
    %1 = needle.cq_gather %0, %arg0 : (!needle.cq<4, 128, [16, 128]>, i32) -> tensor<128xf32>
    %2 = needle.hadamard %1 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
    %3 = needle.scale %2 {factor = 11.3137083 : f32} : (tensor<128xf32>) -> tensor<128xf32>
    %4 = needle.lanes_init %3 : (tensor<128xf32>) -> tensor<4x128xf32>
    %result, %cell = needle.block %4, %arg0, %arg1 {engram_site = 0 : i64, global = false, id = 0 : i64, source = 0 : i64} : (tensor<4x128xf32>, i32, i32) -> (tensor<4x128xf32>, tensor<128xf32>) {
    ^bb0(%arg2: tensor<4x128xf32>, %arg3: i32, %arg4: i32):
      %24 = needle.lane_norm %arg2 {eps = 9.99999997E-7 : f32} : (tensor<4x128xf32>) -> tensor<512xf32>
      %25 = needle.weight "mhc.phi_pre" block 0 : !needle.cq<4, 128, [4, 512]>
      %26 = needle.hadamard %24 {group = 128 : i64} : (tensor<512xf32>) -> tensor<512xf32>
      %27 = needle.cq_dequant %25 : (!needle.cq<4, 128, [4, 512]>) -> tensor<4x512xf32>
      %28 = needle.matmul %27, %26 : (tensor<4x512xf32>, tensor<512xf32>) -> tensor<4xf32>
      %29 = needle.weight "mhc.phi_post" block 0 : !needle.cq<4, 128, [4, 512]>
      %30 = needle.hadamard %24 {group = 128 : i64} : (tensor<512xf32>) -> tensor<512xf32>
      %31 = needle.cq_dequant %29 : (!needle.cq<4, 128, [4, 512]>) -> tensor<4x512xf32>
      %32 = needle.matmul %31, %30 : (tensor<4x512xf32>, tensor<512xf32>) -> tensor<4xf32>
      %33 = needle.weight "mhc.phi_res" block 0 : !needle.cq<4, 128, [16, 512]>
      %34 = needle.hadamard %24 {group = 128 : i64} : (tensor<512xf32>) -> tensor<512xf32>
      %35 = needle.cq_dequant %33 : (!needle.cq<4, 128, [16, 512]>) -> tensor<16x512xf32>
      %36 = needle.matmul %35, %34 : (tensor<16x512xf32>, tensor<512xf32>) -> tensor<16xf32>
      %37 = needle.weight "mhc.a" block 0 : tensor<3xf32>
      %38 = needle.weight "mhc.b_pre" block 0 : tensor<4xf32>
      %39 = needle.weight "mhc.b_post" block 0 : tensor<4xf32>
      %40 = needle.weight "mhc.b_res" block 0 : tensor<4x4xf32>
      %h_pre, %h_post, %mix = needle.mhc_gates %28, %32, %36, %37, %38, %39, %40 {position = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
      %41 = needle.lane_read %arg2, %h_pre : (tensor<4x128xf32>, tensor<4xf32>) -> tensor<128xf32>
      %42 = needle.weight "engram.tables" block 0 : !needle.cq<2, 128, [2, 4, 64]>
      %43 = needle.engram_gather %42, %arg3, %arg4 {heads = 1 : i64, orders = array<i64: 2, 3>} : (!needle.cq<2, 128, [2, 4, 64]>, i32, i32) -> tensor<256xf32>
      %44 = needle.hadamard %43 {group = 128 : i64} : (tensor<256xf32>) -> tensor<256xf32>
      %45 = needle.unpad_rows %44 {rows = 2 : i64, width = 64 : i64} : (tensor<256xf32>) -> tensor<128xf32>
      %46 = needle.weight "engram.key" block 0 : !needle.cq<2, 128, [128, 128]>
      %47 = needle.hadamard %45 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
      %48 = needle.cq_dequant %46 : (!needle.cq<2, 128, [128, 128]>) -> tensor<128x128xf32>
      %49 = needle.matmul %48, %47 : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %50 = needle.weight "engram.value" block 0 : !needle.cq<2, 128, [128, 128]>
      %51 = needle.hadamard %45 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
      %52 = needle.cq_dequant %50 : (!needle.cq<2, 128, [128, 128]>) -> tensor<128x128xf32>
      %53 = needle.matmul %52, %51 : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %54 = needle.weight "engram.taps" block 0 : tensor<4x128xf32>
      %55 = needle.causal_taps %53, %54 {stride = 3 : i64} : (tensor<128xf32>, tensor<4x128xf32>) -> tensor<128xf32>
      %56 = needle.engram_gate %41, %49, %55 {eps = 9.99999997E-7 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %57 = needle.weight "attn_norm" block 0 : tensor<128xf32>
      %58 = needle.zc_norm %56, %57 {eps = 9.99999997E-7 : f32, heads = 1 : i64} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %59 = needle.weight "attn.q" block 0 : !needle.cq<2, 128, [8, 128]>
      %60 = needle.hadamard %58 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
      %61 = needle.cq_dequant %59 : (!needle.cq<2, 128, [8, 128]>) -> tensor<8x128xf32>
      %62 = needle.matmul %61, %60 : (tensor<8x128xf32>, tensor<128xf32>) -> tensor<8xf32>
      %63 = needle.weight "attn.k" block 0 : !needle.cq<2, 128, [4, 128]>
      %64 = needle.hadamard %58 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
      %65 = needle.cq_dequant %63 : (!needle.cq<2, 128, [4, 128]>) -> tensor<4x128xf32>
      %66 = needle.matmul %65, %64 : (tensor<4x128xf32>, tensor<128xf32>) -> tensor<4xf32>
      %67 = needle.weight "attn.v" block 0 : !needle.cq<2, 128, [4, 128]>
      %68 = needle.hadamard %58 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
      %69 = needle.cq_dequant %67 : (!needle.cq<2, 128, [4, 128]>) -> tensor<4x128xf32>
      %70 = needle.matmul %69, %68 : (tensor<4x128xf32>, tensor<128xf32>) -> tensor<4xf32>
      %71 = needle.weight "attn.gate" block 0 : !needle.cq<2, 128, [8, 128]>
      %72 = needle.hadamard %58 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
      %73 = needle.cq_dequant %71 : (!needle.cq<2, 128, [8, 128]>) -> tensor<8x128xf32>
      %74 = needle.matmul %73, %72 : (tensor<8x128xf32>, tensor<128xf32>) -> tensor<8xf32>
      %75 = needle.weight "attn.q_taps" block 0 : tensor<3x8xf32>
      %76 = needle.causal_taps %62, %75 {stride = 1 : i64} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
      %77 = needle.weight "attn.k_taps" block 0 : tensor<3x4xf32>
      %78 = needle.causal_taps %66, %77 {stride = 1 : i64} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
      %79 = needle.weight "attn.v_taps" block 0 : tensor<3x4xf32>
      %80 = needle.causal_taps %70, %79 {stride = 1 : i64} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
      %81 = needle.weight "attn.q_norm" block 0 : tensor<4xf32>
      %82 = needle.zc_norm %76, %81 {eps = 9.99999997E-7 : f32, heads = 2 : i64} : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
      %83 = needle.rope %82, %arg4 {heads = 2 : i64, theta = 1.000000e+04 : f64} : (tensor<8xf32>, i32) -> tensor<8xf32>
      %84 = needle.weight "attn.k_norm" block 0 : tensor<4xf32>
      %85 = needle.zc_norm %78, %84 {eps = 9.99999997E-7 : f32, heads = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %86 = needle.rope %85, %arg4 {heads = 1 : i64, theta = 1.000000e+04 : f64} : (tensor<4xf32>, i32) -> tensor<4xf32>
      %87 = needle.attention %83, %86, %80 {heads = 2 : i64, kv_heads = 1 : i64, window = 4 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
      %88 = needle.sigmoid_gate %87, %74 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      %89 = needle.weight "attn.o" block 0 : !needle.cq<2, 128, [128, 8]>
      %90 = needle.hadamard %88 {group = 128 : i64} : (tensor<8xf32>) -> tensor<128xf32>
      %91 = needle.cq_dequant %89 : (!needle.cq<2, 128, [128, 8]>) -> tensor<128x128xf32>
      %92 = needle.matmul %91, %90 : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %93 = needle.weight "post_attn_norm" block 0 : tensor<128xf32>
      %94 = needle.weight "attn_gate" block 0 : tensor<1xf32>
      %95 = needle.residual_gate %56, %92, %93, %94 {eps = 9.99999997E-7 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<1xf32>) -> tensor<128xf32>
      %96 = needle.weight "mlp_norm" block 0 : tensor<128xf32>
      %97 = needle.weight "mlp.w1a" block 0 : tensor<8x8xf32>
      %98 = needle.weight "mlp.w2a" block 0 : tensor<8x8xf32>
      %99 = needle.weight "mlp.w3a" block 0 : tensor<8x8xf32>
      %100 = needle.weight "mlp.w1b" block 0 : tensor<16x16xf32>
      %101 = needle.weight "mlp.w2b" block 0 : tensor<16x16xf32>
      %102 = needle.weight "mlp.w3b" block 0 : tensor<16x16xf32>
      %103 = needle.weight "mlp.d1" block 0 : tensor<128xf32>
      %104 = needle.weight "mlp.d2" block 0 : tensor<128xf32>
      %105 = needle.weight "mlp.b2" block 0 : tensor<128xf32>
      %106 = needle.weight "mlp.d3" block 0 : tensor<128xf32>
      %107 = needle.weight "mlp.d4" block 0 : tensor<128xf32>
      %108 = needle.weight "mlp.cond_v" block 0 : tensor<128x8xf32>
      %109 = needle.weight "mlp.cond_u" block 0 : tensor<8x128xf32>
      %110 = needle.weight "mlp.p1" : tensor<128xi32>
      %111 = needle.weight "mlp.p2" : tensor<128xi32>
      %112 = needle.kron_mlp %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111 {eps = 9.99999997E-7 : f32} : (tensor<128xf32>, tensor<128xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128x8xf32>, tensor<8x128xf32>, tensor<128xi32>, tensor<128xi32>) -> tensor<128xf32>
      %113 = needle.block_update %95, %112, %41 : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %114 = needle.lane_write %arg2, %mix, %h_post, %113 : (tensor<4x128xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<128xf32>) -> tensor<4x128xf32>
      %115 = needle.lane_mean %114 : (tensor<4x128xf32>) -> tensor<128xf32>
      needle.yield %114, %115 : tensor<4x128xf32>, tensor<128xf32>
    }
    %5 = needle.lane_mean %result : (tensor<4x128xf32>) -> tensor<128xf32>
    %6 = needle.weight "final_norm" : tensor<128xf32>
    %7 = needle.zc_norm %5, %6 {eps = 9.99999997E-7 : f32, heads = 1 : i64} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %8 = needle.hadamard %7 {group = 128 : i64} : (tensor<128xf32>) -> tensor<128xf32>
    %9 = needle.cq_dequant %0 : (!needle.cq<4, 128, [16, 128]>) -> tensor<16x128xf32>
    %10 = needle.matmul %9, %8 : (tensor<16x128xf32>, tensor<128xf32>) -> tensor<16xf32>
    %11 = needle.weight "confidence.probes" rows [0] : tensor<2x1x128xf32>
    %12 = needle.weight "confidence.gain" rows [0] : tensor<2x1xf32>
    %13 = needle.weight "confidence.query" : tensor<1x128xf32>
    %14 = needle.weight "confidence.row_bias" rows [0] : tensor<1x2x1xf32>
    %15 = needle.weight "confidence.proj" : tensor<1x128xf32>
    %16 = needle.weight "confidence.bias" : tensor<1xf32>
    %17 = needle.head confidence(%3, %cell) token %arg0 weights(%11, %12, %13, %14, %15, %16) {eps = 9.99999997E-7 : f32, pad = 0 : i64} : (tensor<128xf32>, tensor<128xf32>, i32, tensor<2x1x128xf32>, tensor<2x1xf32>, tensor<1x128xf32>, tensor<1x2x1xf32>, tensor<1x128xf32>, tensor<1xf32>) -> tensor<1xf32>
    %18 = needle.weight "embedding_head.probes" rows [0] : tensor<2x1x128xf32>
    %19 = needle.weight "embedding_head.gain" rows [0] : tensor<2x1xf32>
    %20 = needle.weight "embedding_head.query" : tensor<1x128xf32>
    %21 = needle.weight "embedding_head.row_bias" rows [0] : tensor<1x2x1xf32>
    %22 = needle.weight "embedding_head.proj" : tensor<4x128xf32>
    %23 = needle.head embedding(%3, %cell) token %arg0 weights(%18, %19, %20, %21, %22) {eps = 9.99999997E-7 : f32, pad = 0 : i64} : (tensor<128xf32>, tensor<128xf32>, i32, tensor<2x1x128xf32>, tensor<2x1xf32>, tensor<1x128xf32>, tensor<1x2x1xf32>, tensor<4x128xf32>) -> tensor<4xf32>
    return %10, %17, %23 : tensor<16xf32>, tensor<1xf32>, tensor<4xf32>
  }
}

