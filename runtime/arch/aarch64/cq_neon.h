// needle_rt, the fast mode's CQ kernels with NEON.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_NEON_KERNELS
namespace needle_rt {

/// The fast mode's kernels with aarch64's NEON (every aarch64 CPU has it): CqLutPortable's sums,
/// the tables built by cqlut_group_table. Per 16-byte half h of a 32-byte chunk (16 rows, units
/// 4q + h in the low nibbles and 4q + 2 + h in the high ones): two 16-entry lookups (tbl), added
/// in pairs into 16-bit sums per row (a row's whole group: at most 127·128 = 16,256 in magnitude,
/// no overflow); per group, the sums to float times scale × norm.
struct CqLutNeon : CqLutScalarTables {
  template <int kBits, int kTokens>
  static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count, const CqLutBlockTables<kBits> *tables,
                   const CqLutBlockScales *scale, float (*out)[CqLut16::tile]) {
    constexpr int kChunks = 8 * kBits;
    const uint8x16_t nibble = vdupq_n_u8(15);
    float32x4_t sums[kTokens][4];
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        sums[j][i] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < count; ++g, tile += 32 * kChunks) {
      int16x8_t acc[kTokens][2]; // rows 0..7, 8..15
      for (int j = 0; j < kTokens; ++j)
        acc[j][0] = acc[j][1] = vdupq_n_s16(0);
      for (int q = 0; q < kChunks; ++q)
        for (int h = 0; h < 2; ++h) {
          const uint8x16_t codes = vld1q_u8(tile + 32 * q + 16 * h);
          const uint8x16_t low = vandq_u8(codes, nibble), high = vshrq_n_u8(codes, 4);
          for (int j = 0; j < kTokens; ++j) {
            const int8_t *t = tables[j][g] + 64 * q + 16 * h; // unit 4q + h; 4q + 2 + h 32 bytes on
            const int8x16_t r1 = vqtbl1q_s8(vld1q_s8(t), low), r2 = vqtbl1q_s8(vld1q_s8(t + 32), high);
            acc[j][0] = vaddq_s16(acc[j][0], vaddl_s8(vget_low_s8(r1), vget_low_s8(r2)));
            acc[j][1] = vaddq_s16(acc[j][1], vaddl_high_s8(r1, r2));
          }
        }
      float32x4_t n[4];
      for (int i = 0; i < 4; ++i)
        n[i] = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(norms + 16 * g + 4 * i)));
      for (int j = 0; j < kTokens; ++j)
        for (int i = 0; i < 4; ++i) { // rows 4i..4i+3
          const int16x4_t part = i % 2 ? vget_high_s16(acc[j][i / 2]) : vget_low_s16(acc[j][i / 2]);
          sums[j][i] = vfmaq_f32(sums[j][i], vcvtq_f32_s32(vmovl_s16(part)), vmulq_n_f32(n[i], scale[j][g]));
        }
    }
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        vst1q_f32(out[j] + 4 * i, sums[j][i]);
  }
};

} // namespace needle_rt
#endif
