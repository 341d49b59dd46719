// needle_rt, the fast mode's CQ kernels with NEON.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_NEON_KERNELS
namespace needle_rt {

/// cqlut_group_largest with NEON, 8 inputs at a time (CQ2: a unit's two products are neighbours,
/// which a pairwise add sums): the same float, as maxima do not depend on their order.
template <int kBits> inline float cqlut_group_largest_neon(const float *codebook, const float *x) {
  float low = codebook[0], high = codebook[0];
  for (int k = 1; k < (1 << kBits); ++k) {
    low = std::fmin(low, codebook[k]);
    high = std::fmax(high, codebook[k]);
  }
  float32x4_t largest = vdupq_n_f32(0.0f);
  for (int i = 0; i < cq_group; i += 8) {
    float32x4_t top[2], bottom[2];
    for (int h = 0; h < 2; ++h) {
      const float32x4_t in = vld1q_f32(x + i + 4 * h), a = vmulq_n_f32(in, low), b = vmulq_n_f32(in, high);
      top[h] = vmaxnmq_f32(a, b);
      bottom[h] = vminnmq_f32(a, b);
    }
    if constexpr (kBits == 2) {
      top[0] = top[1] = vpaddq_f32(top[0], top[1]);
      bottom[0] = bottom[1] = vpaddq_f32(bottom[0], bottom[1]);
    }
    for (int h = 0; h < 2; ++h)
      largest = vmaxnmq_f32(largest, vmaxnmq_f32(top[h], vnegq_f32(bottom[h])));
  }
  return vmaxnmvq_f32(largest);
}

/// cqlut_group_table with NEON: a unit's 16 entries as 4 vectors (its products unfused, as the
/// portable code's), scaled by the largest, clamped (a NaN to -127, as fmax and fmin do), rounded
/// to nearest even and narrowed to bytes.
template <int kBits> inline float cqlut_group_table_neon(const float *codebook, const float *x, int8_t *table) {
  const float top = cqlut_group_largest_neon<kBits>(codebook, x);
  const float32x4_t inverse = vdupq_n_f32(top > 0.0f ? 127.0f / top : 0.0f);
  const float32x4_t high = vdupq_n_f32(127.0f), low = vdupq_n_f32(-127.0f);
  for (int u = 0; u < 32 * kBits; ++u, table += 16) {
    float32x4_t entries[4];
    if constexpr (kBits == 2) {
      const float32x4_t first = vmulq_n_f32(vld1q_f32(codebook), x[2 * u]); // c[k & 3]·x0
      for (int m = 0; m < 4; ++m)                                           // entries 4m..4m+3
        entries[m] = vaddq_f32(first, vdupq_n_f32(codebook[m] * x[2 * u + 1]));
    } else {
      for (int m = 0; m < 4; ++m)
        entries[m] = vmulq_n_f32(vld1q_f32(codebook + 4 * m), x[u]);
    }
    int16x4_t words[4];
    for (int m = 0; m < 4; ++m)
      words[m] = vqmovn_s32(vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(vmulq_f32(entries[m], inverse), low), high)));
    vst1q_s8(table,
             vcombine_s8(vqmovn_s16(vcombine_s16(words[0], words[1])), vqmovn_s16(vcombine_s16(words[2], words[3]))));
  }
  return top / 127.0f;
}

/// The fast mode's tables with NEON (cqlut_group_table_neon); runs of 2 tokens, as the portable
/// tables', keep a run's tables small for small stacks.
struct CqLutNeonTables {
  template <int kBits> static constexpr int run_tokens = 2;
  template <int kBits> static float table(const float *codebook, const float *x, int8_t *table) {
    return cqlut_group_table_neon<kBits>(codebook, x, table);
  }
};

/// The fast mode's kernels with aarch64's NEON (every aarch64 CPU has it): CqLutPortable's sums,
/// the tables built by cqlut_group_table_neon. Per 16-byte half h of a 32-byte chunk (16 rows, units
/// 4q + h in the low nibbles and 4q + 2 + h in the high ones): two 16-entry lookups (tbl), added
/// in pairs into 16-bit sums per row (a row's whole group: at most 127·128 = 16,256 in magnitude,
/// no overflow); per group, the sums to float times scale × norm.
struct CqLutNeon : CqLutNeonTables {
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
