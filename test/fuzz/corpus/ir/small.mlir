module attributes {needle.arena = {align = 64 : i64, outputs_end = 7424 : i64, size = 16640 : i64, state_end = 7232 : i64}, needle.codebooks = {cq2 = array<f32: -0.13317214, -0.039902091, 0.0400352813, 0.133460447>, cq4 = array<f32: -0.239531547, -0.180706054, -0.140957937, -0.109012552, -0.0815129652, -0.0565276518, -0.0329391509, -0.0101161096, 1.271080e-02, 0.0357079171, 0.0594582558, 0.0849770233, 0.112741619, 0.144696921, 1.842390e-01, 0.242273703>}, needle.ladder_order = array<i64: 0>, needle.max_seq_len = 16 : i64, needle.model = "small.needle"} {
  func.func @step(%arg0: i32, %arg1: i32) -> (tensor<16xf32>, tensor<1xf32>, tensor<4xf32>) {
    %0 = needle.weight "embed.weight" : !needle.cq<4, 128, [16, 128]>
    %1 = needle.cq_gather %0, %arg0 {needle.buffers = array<i64: 7424>} : (!needle.cq<4, 128, [16, 128]>, i32) -> tensor<128xf32>
    %2 = needle.hadamard %1 {group = 128 : i64, needle.buffers = array<i64: 7936>} : (tensor<128xf32>) -> tensor<128xf32>
    %3 = needle.scale %2 {factor = 11.3137083 : f32, needle.buffers = array<i64: 7424>} : (tensor<128xf32>) -> tensor<128xf32>
    %4 = needle.lanes_init %3 {needle.buffers = array<i64: 7936>} : (tensor<128xf32>) -> tensor<4x128xf32>
    %result, %cell = needle.block %4, %arg0, %arg1 {engram_site = 0 : i64, global = false, id = 0 : i64, needle.buffers = array<i64: 9984, 12032>, source = 0 : i64} : (tensor<4x128xf32>, i32, i32) -> (tensor<4x128xf32>, tensor<128xf32>) {
    ^bb0(%arg2: tensor<4x128xf32>, %arg3: i32, %arg4: i32):
      %23 = needle.lane_norm %arg2 {eps = 9.99999997E-7 : f32, needle.buffers = array<i64: 12544>} : (tensor<4x128xf32>) -> tensor<512xf32>
      %24 = needle.weight "mhc.phi_pre" block 0 : !needle.cq<4, 128, [4, 512]>
      %25 = needle.hadamard %23 {group = 128 : i64, needle.buffers = array<i64: 14592>} : (tensor<512xf32>) -> tensor<512xf32>
      %26 = needle.cq_matmul %24, %25 {needle.buffers = array<i64: 12544>} : (!needle.cq<4, 128, [4, 512]>, tensor<512xf32>) -> tensor<4xf32>
      %27 = needle.weight "mhc.phi_post" block 0 : !needle.cq<4, 128, [4, 512]>
      %28 = needle.cq_matmul %27, %25 {needle.buffers = array<i64: 12608>} : (!needle.cq<4, 128, [4, 512]>, tensor<512xf32>) -> tensor<4xf32>
      %29 = needle.weight "mhc.phi_res" block 0 : !needle.cq<4, 128, [16, 512]>
      %30 = needle.cq_matmul %29, %25 {needle.buffers = array<i64: 12672>} : (!needle.cq<4, 128, [16, 512]>, tensor<512xf32>) -> tensor<16xf32>
      %31 = needle.weight "mhc.a" block 0 : tensor<3xf32>
      %32 = needle.weight "mhc.b_pre" block 0 : tensor<4xf32>
      %33 = needle.weight "mhc.b_post" block 0 : tensor<4xf32>
      %34 = needle.weight "mhc.b_res" block 0 : tensor<4x4xf32>
      %h_pre, %h_post, %mix = needle.mhc_gates %26, %28, %30, %31, %32, %33, %34 {needle.buffers = array<i64: 12736, 12800, 12864>, position = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
      %35 = needle.lane_read %arg2, %h_pre {needle.buffers = array<i64: 12928>} : (tensor<4x128xf32>, tensor<4xf32>) -> tensor<128xf32>
      %36 = needle.weight "engram.tables" block 0 : !needle.cq<2, 128, [2, 4, 64]>
      %37 = needle.engram_gather %36, %arg3, %arg4 {heads = 1 : i64, needle.buffers = array<i64: 13440>, needle.state = array<i64: 64, 12>, orders = array<i64: 2, 3>} : (!needle.cq<2, 128, [2, 4, 64]>, i32, i32) -> tensor<256xf32>
      %38 = needle.hadamard %37 {group = 128 : i64, needle.buffers = array<i64: 14464>} : (tensor<256xf32>) -> tensor<256xf32>
      %39 = needle.unpad_rows %38 {needle.buffers = array<i64: 13440>, rows = 2 : i64, width = 64 : i64} : (tensor<256xf32>) -> tensor<128xf32>
      %40 = needle.weight "engram.key" block 0 : !needle.cq<2, 128, [128, 128]>
      %41 = needle.hadamard %39 {group = 128 : i64, needle.buffers = array<i64: 13952>} : (tensor<128xf32>) -> tensor<128xf32>
      %42 = needle.cq_matmul %40, %41 {needle.buffers = array<i64: 13440>} : (!needle.cq<2, 128, [128, 128]>, tensor<128xf32>) -> tensor<128xf32>
      %43 = needle.weight "engram.value" block 0 : !needle.cq<2, 128, [128, 128]>
      %44 = needle.cq_matmul %43, %41 {needle.buffers = array<i64: 14464>} : (!needle.cq<2, 128, [128, 128]>, tensor<128xf32>) -> tensor<128xf32>
      %45 = needle.weight "engram.taps" block 0 : tensor<4x128xf32>
      %46 = needle.causal_taps %44, %45 {needle.buffers = array<i64: 13952>, needle.state = array<i64: 128, 4608>, stride = 3 : i64} : (tensor<128xf32>, tensor<4x128xf32>) -> tensor<128xf32>
      %47 = needle.engram_gate %35, %42, %46 {eps = 9.99999997E-7 : f32, needle.buffers = array<i64: 14464>} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %48 = needle.weight "attn_norm" block 0 : tensor<128xf32>
      %49 = needle.zc_norm %47, %48 {eps = 9.99999997E-7 : f32, heads = 1 : i64, needle.buffers = array<i64: 13440>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %50 = needle.weight "attn.q" block 0 : !needle.cq<2, 128, [8, 128]>
      %51 = needle.hadamard %49 {group = 128 : i64, needle.buffers = array<i64: 13952>} : (tensor<128xf32>) -> tensor<128xf32>
      %52 = needle.cq_matmul %50, %51 {needle.buffers = array<i64: 12544>} : (!needle.cq<2, 128, [8, 128]>, tensor<128xf32>) -> tensor<8xf32>
      %53 = needle.weight "attn.k" block 0 : !needle.cq<2, 128, [4, 128]>
      %54 = needle.cq_matmul %53, %51 {needle.buffers = array<i64: 12608>} : (!needle.cq<2, 128, [4, 128]>, tensor<128xf32>) -> tensor<4xf32>
      %55 = needle.weight "attn.v" block 0 : !needle.cq<2, 128, [4, 128]>
      %56 = needle.cq_matmul %55, %51 {needle.buffers = array<i64: 12672>} : (!needle.cq<2, 128, [4, 128]>, tensor<128xf32>) -> tensor<4xf32>
      %57 = needle.weight "attn.gate" block 0 : !needle.cq<2, 128, [8, 128]>
      %58 = needle.cq_matmul %57, %51 {needle.buffers = array<i64: 12736>} : (!needle.cq<2, 128, [8, 128]>, tensor<128xf32>) -> tensor<8xf32>
      %59 = needle.weight "attn.q_taps" block 0 : tensor<3x8xf32>
      %60 = needle.causal_taps %52, %59 {needle.buffers = array<i64: 13440>, needle.state = array<i64: 4736, 64>, stride = 1 : i64} : (tensor<8xf32>, tensor<3x8xf32>) -> tensor<8xf32>
      %61 = needle.weight "attn.k_taps" block 0 : tensor<3x4xf32>
      %62 = needle.causal_taps %54, %61 {needle.buffers = array<i64: 12544>, needle.state = array<i64: 4800, 32>, stride = 1 : i64} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
      %63 = needle.weight "attn.v_taps" block 0 : tensor<3x4xf32>
      %64 = needle.causal_taps %56, %63 {needle.buffers = array<i64: 12608>, needle.state = array<i64: 4864, 32>, stride = 1 : i64} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
      %65 = needle.weight "attn.q_norm" block 0 : tensor<4xf32>
      %66 = needle.zc_norm %60, %65 {eps = 9.99999997E-7 : f32, heads = 2 : i64, needle.buffers = array<i64: 12672>} : (tensor<8xf32>, tensor<4xf32>) -> tensor<8xf32>
      %67 = needle.rope %66, %arg4 {heads = 2 : i64, needle.buffers = array<i64: 13440>, theta = 1.000000e+04 : f64} : (tensor<8xf32>, i32) -> tensor<8xf32>
      %68 = needle.weight "attn.k_norm" block 0 : tensor<4xf32>
      %69 = needle.zc_norm %62, %68 {eps = 9.99999997E-7 : f32, heads = 1 : i64, needle.buffers = array<i64: 12672>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %70 = needle.rope %69, %arg4 {heads = 1 : i64, needle.buffers = array<i64: 12544>, theta = 1.000000e+04 : f64} : (tensor<4xf32>, i32) -> tensor<4xf32>
      %71 = needle.attention %67, %70, %64 {heads = 2 : i64, kv_heads = 1 : i64, needle.buffers = array<i64: 12672>, needle.scratch = array<i64: 13504, 16>, needle.state = array<i64: 4928, 128>, window = 4 : i64} : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
      %72 = needle.sigmoid_gate %71, %58 {needle.buffers = array<i64: 12544>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      %73 = needle.weight "attn.o" block 0 : !needle.cq<2, 128, [128, 8]>
      %74 = needle.hadamard %72 {group = 128 : i64, needle.buffers = array<i64: 13440>} : (tensor<8xf32>) -> tensor<128xf32>
      %75 = needle.cq_matmul %73, %74 {needle.buffers = array<i64: 13952>} : (!needle.cq<2, 128, [128, 8]>, tensor<128xf32>) -> tensor<128xf32>
      %76 = needle.weight "post_attn_norm" block 0 : tensor<128xf32>
      %77 = needle.weight "attn_gate" block 0 : tensor<1xf32>
      %78 = needle.residual_gate %47, %75, %76, %77 {eps = 9.99999997E-7 : f32, needle.buffers = array<i64: 13440>} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<1xf32>) -> tensor<128xf32>
      %79 = needle.weight "mlp_norm" block 0 : tensor<128xf32>
      %80 = needle.weight "mlp.w1a" block 0 : tensor<8x8xf32>
      %81 = needle.weight "mlp.w2a" block 0 : tensor<8x8xf32>
      %82 = needle.weight "mlp.w3a" block 0 : tensor<8x8xf32>
      %83 = needle.weight "mlp.w1b" block 0 : tensor<16x16xf32>
      %84 = needle.weight "mlp.w2b" block 0 : tensor<16x16xf32>
      %85 = needle.weight "mlp.w3b" block 0 : tensor<16x16xf32>
      %86 = needle.weight "mlp.d1" block 0 : tensor<128xf32>
      %87 = needle.weight "mlp.d2" block 0 : tensor<128xf32>
      %88 = needle.weight "mlp.b2" block 0 : tensor<128xf32>
      %89 = needle.weight "mlp.d3" block 0 : tensor<128xf32>
      %90 = needle.weight "mlp.d4" block 0 : tensor<128xf32>
      %91 = needle.weight "mlp.cond_v" block 0 : tensor<128x8xf32>
      %92 = needle.weight "mlp.cond_u" block 0 : tensor<8x128xf32>
      %93 = needle.weight "mlp.p1" : tensor<128xi32>
      %94 = needle.weight "mlp.p2" : tensor<128xi32>
      %95 = needle.kron_mlp %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94 {eps = 9.99999997E-7 : f32, needle.buffers = array<i64: 13952>, needle.scratch = array<i64: 14464, 1536>} : (tensor<128xf32>, tensor<128xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128x8xf32>, tensor<8x128xf32>, tensor<128xi32>, tensor<128xi32>) -> tensor<128xf32>
      %96 = needle.block_update %78, %95, %35 {needle.buffers = array<i64: 14464>} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
      %97 = needle.lane_write %arg2, %mix, %h_post, %96 {needle.buffers = array<i64: 9984>} : (tensor<4x128xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<128xf32>) -> tensor<4x128xf32>
      %98 = needle.lane_mean %97 {needle.buffers = array<i64: 12032>} : (tensor<4x128xf32>) -> tensor<128xf32>
      needle.yield %97, %98 : tensor<4x128xf32>, tensor<128xf32>
    }
    %5 = needle.lane_mean %result {needle.buffers = array<i64: 7936>} : (tensor<4x128xf32>) -> tensor<128xf32>
    %6 = needle.weight "final_norm" : tensor<128xf32>
    %7 = needle.zc_norm %5, %6 {eps = 9.99999997E-7 : f32, heads = 1 : i64, needle.buffers = array<i64: 8448>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %8 = needle.hadamard %7 {group = 128 : i64, needle.buffers = array<i64: 7936>} : (tensor<128xf32>) -> tensor<128xf32>
    %9 = needle.cq_matmul %0, %8 {needle.buffers = array<i64: 7232>} : (!needle.cq<4, 128, [16, 128]>, tensor<128xf32>) -> tensor<16xf32>
    %10 = needle.weight "confidence.probes" rows [0] : tensor<2x1x128xf32>
    %11 = needle.weight "confidence.gain" rows [0] : tensor<2x1xf32>
    %12 = needle.weight "confidence.query" : tensor<1x128xf32>
    %13 = needle.weight "confidence.row_bias" rows [0] : tensor<1x2x1xf32>
    %14 = needle.weight "confidence.proj" : tensor<1x128xf32>
    %15 = needle.weight "confidence.bias" : tensor<1xf32>
    %16 = needle.head confidence(%3, %cell) token %arg0 weights(%10, %11, %12, %13, %14, %15) {eps = 9.99999997E-7 : f32, needle.buffers = array<i64: 7296>, needle.scratch = array<i64: 7936, 528>, needle.state = array<i64: 5056, 1040>, pad = 0 : i64} : (tensor<128xf32>, tensor<128xf32>, i32, tensor<2x1x128xf32>, tensor<2x1xf32>, tensor<1x128xf32>, tensor<1x2x1xf32>, tensor<1x128xf32>, tensor<1xf32>) -> tensor<1xf32>
    %17 = needle.weight "embedding_head.probes" rows [0] : tensor<2x1x128xf32>
    %18 = needle.weight "embedding_head.gain" rows [0] : tensor<2x1xf32>
    %19 = needle.weight "embedding_head.query" : tensor<1x128xf32>
    %20 = needle.weight "embedding_head.row_bias" rows [0] : tensor<1x2x1xf32>
    %21 = needle.weight "embedding_head.proj" : tensor<4x128xf32>
    %22 = needle.head embedding(%3, %cell) token %arg0 weights(%17, %18, %19, %20, %21) {eps = 9.99999997E-7 : f32, needle.buffers = array<i64: 7360>, needle.scratch = array<i64: 7936, 528>, needle.state = array<i64: 6144, 1040>, pad = 0 : i64} : (tensor<128xf32>, tensor<128xf32>, i32, tensor<2x1x128xf32>, tensor<2x1xf32>, tensor<1x128xf32>, tensor<1x2x1xf32>, tensor<4x128xf32>) -> tensor<4xf32>
    return %9, %16, %22 : tensor<16xf32>, tensor<1xf32>, tensor<4xf32>
  }
}

