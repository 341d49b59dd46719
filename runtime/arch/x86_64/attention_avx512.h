// needle_rt, attention with AVX-512F.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// attention_x86's blocks with AVX-512F: AttentionAvx2's, 16 lanes a vector (twice the sums an FMA
// does, in the 32 registers twice the vectors), in the same order, so the outputs are the AVX2
// kernel's bit for bit. A masked load and store serve a block's tail.

/// avx2_exp with AVX-512F, 16 at a time: the same operations, so the same floats.
NEEDLE_RT_AVX512 inline __m512 avx512_exp(__m512 x) {
  x = _mm512_maskz_max_ps(kAll16, _mm512_set1_ps(CephesExp::lowest), x); // x second: a NaN stays NaN
  const __m512 n = _mm512_maskz_roundscale_ps(
      kAll16, _mm512_fmadd_ps(x, _mm512_set1_ps(CephesExp::log2e), _mm512_set1_ps(0.5f)), _MM_FROUND_TO_NEG_INF);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CephesExp::ln2_high), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CephesExp::ln2_low), r);
  __m512 p = _mm512_set1_ps(CephesExp::poly[0]);
  for (int c = 1; c < 6; ++c)
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CephesExp::poly[c]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i two_n = _mm512_maskz_slli_epi32(
      kAll16, _mm512_add_epi32(_mm512_maskz_cvtps_epi32(kAll16, n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(two_n));
}

/// attention_softmax_avx2 with AVX-512F: the max 16 at a time, the exponentials 16 at a time
/// and added into the normalizer's 8 lanes half by half (its order), the rest as it does; the
/// same floats.
NEEDLE_RT_AVX512 inline float attention_softmax_avx512(float *scores, int64_t count, float scale) {
  __m512 top = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    top = _mm512_maskz_max_ps(kAll16, top, _mm512_loadu_ps(scores + i));
  if (i < count) // lanes past count keep top
    top = _mm512_maskz_max_ps(kAll16, top, _mm512_mask_loadu_ps(top, avx512_first_lanes(count - i), scores + i));
  const float largest = avx2_lane_max(_mm256_max_ps(avx512_half<0>(top), avx512_half<1>(top)));
  const __m512 factor = _mm512_set1_ps(scale), shift = _mm512_mul_ps(_mm512_set1_ps(largest), factor);
  __m256 sum = _mm256_setzero_ps();
  for (i = 0; i + 16 <= count; i += 16) {
    const __m512 e = avx512_exp(_mm512_fmsub_ps(_mm512_loadu_ps(scores + i), factor, shift));
    _mm512_storeu_ps(scores + i, e);
    sum = _mm256_add_ps(_mm256_add_ps(sum, avx512_half<0>(e)), avx512_half<1>(e));
  }
  return 1.0f /
         avx2_lane_sum(attention_exps_avx2(scores, i, count, avx512_half<0>(factor), avx512_half<0>(shift), sum));
}

/// acc[h][j] += b[h·b_stride] · vectors[j] (avx2_outer_fma's, 16 lanes).
template <int kHeads, int kVectors>
NEEDLE_RT_AVX512 inline void avx512_outer_fma(__m512 (&acc)[kHeads][kVectors], const __m512 (&vectors)[kVectors],
                                              const float *b, int64_t b_stride) {
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
    const __m512 scalar = _mm512_set1_ps(b[h * b_stride]);
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      acc[h][j] = _mm512_fmadd_ps(scalar, vectors[j], acc[h][j]);
  }
}

/// attention_score_block_avx2's, for 16·kVectors slots, of them the ones `live` selects (a block's
/// tail: one vector, kVectors 1).
template <int kHeads, int kVectors>
NEEDLE_RT_AVX512 inline void attention_score_block_avx512(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                          float *scores, int64_t stride, __mmask16 live = kAll16) {
  __m512 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t d = 0; d < dqk; ++d) {
    __m512 keys[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      keys[j] = _mm512_maskz_loadu_ps(live, k + d * capacity + 16 * j);
    avx512_outer_fma(acc, keys, q + d, dqk);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      _mm512_mask_storeu_ps(scores + h * stride + 16 * j, live, acc[h][j]);
}

/// attention_value_block_avx2's, for 16·kVectors values.
template <int kHeads, int kVectors>
NEEDLE_RT_AVX512 inline void attention_value_block_avx512(const float *scores, int64_t count, const float *v,
                                                          int64_t v_width, int64_t first_slot, int64_t capacity,
                                                          const float *inv_sum, int64_t dv, float *out) {
  __m512 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t i = 0, slot = first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
    __m512 values[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      values[j] = _mm512_loadu_ps(v + slot * v_width + 16 * j);
    avx512_outer_fma(acc, values, scores + i, count);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      _mm512_storeu_ps(out + h * dv + 16 * j, _mm512_mul_ps(acc[h][j], _mm512_set1_ps(inv_sum[h])));
}

/// The AVX-512 blocks of attention_x86 (AttentionAvx2's, dv a multiple of 16), up to 6 heads at
/// once: 6 heads' sums of 4 vectors and the 4 vectors they multiply fit the 32 registers.
struct AttentionAvx512 {
  static constexpr int64_t width = 16;
  static constexpr int most_heads = kAttentionMostHeads;
  NEEDLE_RT_AVX512 static float softmax(float *scores, int64_t count, float scale) {
    return attention_softmax_avx512(scores, count, scale);
  }
  template <int kHeads>
  NEEDLE_RT_AVX512 static void scores(const float *q, int64_t dqk, const float *k, int64_t capacity, int64_t slots,
                                      float *scores, int64_t stride) {
    int64_t i = 0;
    for (; i + 64 <= slots; i += 64)
      attention_score_block_avx512<kHeads, 4>(q, dqk, k + i, capacity, scores + i, stride);
    for (; i + 16 <= slots; i += 16)
      attention_score_block_avx512<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride);
    if (i < slots)
      attention_score_block_avx512<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride,
                                              avx512_first_lanes(slots - i));
  }
  template <int kHeads>
  NEEDLE_RT_AVX512 static void values(const float *scores, int64_t count, const float *v, int64_t v_width,
                                      int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                      float *out) {
    int64_t e = 0;
    for (; e + 64 <= dv; e += 64)
      attention_value_block_avx512<kHeads, 4>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv,
                                              out + e);
    for (; e < dv; e += 16)
      attention_value_block_avx512<kHeads, 1>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv,
                                              out + e);
  }
};

/// attention with AVX-512F where dv is a multiple of 16, else attention_avx2. Scratch:
/// attention_scratch_floats(capacity, heads, kv_heads).
NEEDLE_RT_AVX512 inline void attention_avx512(const float *q, const float *k, const float *v, int64_t heads,
                                              int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window,
                                              int64_t capacity, int64_t t, float *k_cache, float *v_cache,
                                              float *scores, float *out) {
  if (dv % AttentionAvx512::width != 0)
    return attention_avx2(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
  attention_x86<AttentionAvx512>(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
}

} // namespace needle_rt
#endif
