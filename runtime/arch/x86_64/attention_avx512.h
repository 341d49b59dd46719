// needle_rt, attention with AVX-512F.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// attention_x86 with AVX-512F: its blocks at 16 lanes (twice the sums an FMA does, in the 32
// registers twice the vectors), in the same order, so the outputs are the AVX2 kernel's bit for
// bit.

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

/// attention_x86.h's vector operations with AVX-512F: 16 floats a vector, a masked load and
/// store for a block's tail.
struct F32x16 {
  using Vector = __m512;
  static constexpr int64_t width = 16;
  NEEDLE_RT_AVX512 static void load(Vector &v, const float *p) { v = _mm512_loadu_ps(p); }
  NEEDLE_RT_AVX512 static void load(Vector &v, const float *p, int64_t live) {
    v = _mm512_maskz_loadu_ps(avx512_first_lanes(live), p);
  }
  NEEDLE_RT_AVX512 static void store(float *p, const Vector &v) { _mm512_storeu_ps(p, v); }
  NEEDLE_RT_AVX512 static void store(float *p, const Vector &v, int64_t live) {
    _mm512_mask_storeu_ps(p, avx512_first_lanes(live), v);
  }
  NEEDLE_RT_AVX512 static void broadcast(Vector &v, float scalar) { v = _mm512_set1_ps(scalar); }
  NEEDLE_RT_AVX512 static void fma(Vector &acc, const Vector &a, const Vector &b) { acc = _mm512_fmadd_ps(a, b, acc); }
  NEEDLE_RT_AVX512 static void scaled_store(float *p, const Vector &v, float factor) {
    _mm512_storeu_ps(p, _mm512_mul_ps(v, _mm512_set1_ps(factor)));
  }
};

/// The AVX-512 blocks of attention_x86 (AttentionAvx2's, dv a multiple of 16), up to 6 heads at
/// once: 6 heads' sums of 4 vectors and the 4 vectors they multiply fit the 32 registers.
struct AttentionAvx512 {
  static constexpr int64_t width = F32x16::width;
  static constexpr int most_heads = kAttentionMostHeads;
  NEEDLE_RT_AVX512 static float softmax(float *scores, int64_t count, float scale) {
    return attention_softmax_avx512(scores, count, scale);
  }
  template <int kHeads, int kVectors, bool kMasked = false>
  NEEDLE_RT_AVX512 static void score_block(const float *q, int64_t dqk, const float *k, int64_t capacity, float *scores,
                                           int64_t stride, int64_t live = width) {
    attention_score_block_x86<F32x16, kHeads, kVectors, kMasked>(q, dqk, k, capacity, scores, stride, live);
  }
  template <int kHeads, int kVectors>
  NEEDLE_RT_AVX512 static void value_block(const float *scores, int64_t count, const float *v, int64_t v_width,
                                           int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                           float *out) {
    attention_value_block_x86<F32x16, kHeads, kVectors>(scores, count, v, v_width, first_slot, capacity, inv_sum, dv,
                                                        out);
  }
  template <int kHeads>
  NEEDLE_RT_AVX512 static void scores(const float *q, int64_t dqk, const float *k, int64_t capacity, int64_t slots,
                                      float *scores, int64_t stride) {
    attention_scores_x86<AttentionAvx512, kHeads>(q, dqk, k, capacity, slots, scores, stride);
  }
  template <int kHeads>
  NEEDLE_RT_AVX512 static void values(const float *scores, int64_t count, const float *v, int64_t v_width,
                                      int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                      float *out) {
    attention_values_x86<AttentionAvx512, kHeads>(scores, count, v, v_width, first_slot, capacity, inv_sum, dv, out);
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
