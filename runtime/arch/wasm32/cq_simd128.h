// needle_rt, the fast mode's CQ kernels with simd128.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_WASM_KERNELS
namespace needle_rt {

// The fast mode's kernels with wasm simd128. Their own target attribute lets the runtime compile
// for wasm32 without -msimd128: the object backend calls them only when the target has simd128
// (codegen/Select), and C++ compiled with -msimd128 reaches them through the #if in cq_matmul_lut16_fast.

/// CqLutNeon's sums with simd128: per 16 bytes of a chunk, two 16-entry lookups (i8x16.swizzle),
/// widened to 16 bits and added per row (at most 16,256 in magnitude, as NEON's); per group, the sums to float times
/// scale × norm (the norms converted one by one: simd128 has no fp16).
struct CqLutSimd128 : CqLutScalarTables {
  template <int kBits, int kTokens>
  NEEDLE_RT_SIMD128 static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                     const CqLutBlockTables<kBits> *tables, const CqLutBlockScales *scale,
                                     float (*out)[CqLut16::tile]) {
    constexpr int kChunks = 8 * kBits;
    const v128_t nibble = wasm_u8x16_splat(15);
    v128_t sums[kTokens][4];
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        sums[j][i] = wasm_f32x4_splat(0.0f);
    for (int64_t g = 0; g < count; ++g, tile += 32 * kChunks) {
      v128_t acc[kTokens][2]; // rows 0..7, 8..15, as 16-bit sums
      for (int j = 0; j < kTokens; ++j)
        acc[j][0] = acc[j][1] = wasm_i16x8_splat(0);
      for (int q = 0; q < kChunks; ++q)
        for (int h = 0; h < 2; ++h) {
          const v128_t codes = wasm_v128_load(tile + 32 * q + 16 * h);
          const v128_t low = wasm_v128_and(codes, nibble), high = wasm_u8x16_shr(codes, 4);
          for (int j = 0; j < kTokens; ++j) {
            const int8_t *t = tables[j][g] + 64 * q + 16 * h; // unit 4q + h; 4q + 2 + h 32 bytes on
            const v128_t r1 = wasm_i8x16_swizzle(wasm_v128_load(t), low);
            const v128_t r2 = wasm_i8x16_swizzle(wasm_v128_load(t + 32), high);
            acc[j][0] = wasm_i16x8_add(
                acc[j][0], wasm_i16x8_add(wasm_i16x8_extend_low_i8x16(r1), wasm_i16x8_extend_low_i8x16(r2)));
            acc[j][1] = wasm_i16x8_add(
                acc[j][1], wasm_i16x8_add(wasm_i16x8_extend_high_i8x16(r1), wasm_i16x8_extend_high_i8x16(r2)));
          }
        }
      v128_t n[4];
      for (int i = 0; i < 4; ++i) {
        const uint16_t *h = norms + 16 * g + 4 * i;
        n[i] = wasm_f32x4_make(half_to_float(h[0]), half_to_float(h[1]), half_to_float(h[2]), half_to_float(h[3]));
      }
      for (int j = 0; j < kTokens; ++j)
        for (int i = 0; i < 4; ++i) { // rows 4i..4i+3
          const v128_t part =
              i % 2 ? wasm_i32x4_extend_high_i16x8(acc[j][i / 2]) : wasm_i32x4_extend_low_i16x8(acc[j][i / 2]);
          const v128_t weight = wasm_f32x4_mul(n[i], wasm_f32x4_splat(scale[j][g]));
          sums[j][i] = wasm_f32x4_add(sums[j][i], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(part), weight));
        }
    }
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        wasm_v128_store(out[j] + 4 * i, sums[j][i]);
  }
};

/// cq_matmul_lut16_fast with simd128 (bits 2 or 4).
NEEDLE_RT_SIMD128 inline void cq_matmul_lut16_fast_simd128(const uint8_t *packed, const uint16_t *norms,
                                                           const float *codebook, int bits, int64_t rows, int64_t cols,
                                                           const float *x_rot, float *y, int64_t stride, int64_t n) {
  cqlut_matmul_on<CqLutSimd128>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

} // namespace needle_rt
#endif
