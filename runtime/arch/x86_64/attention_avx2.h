// needle_rt, attention with AVX2 and FMA.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// attention_x86 with AVX2 and FMA: its blocks at 8 lanes, query heads in pairs; the softmax's
// normalizer is summed 8 lanes at a time.

/// The lanes of a vector below `live` (0..8): a mask for maskload / maskstore.
NEEDLE_RT_AVX2 inline __m256i avx2_first_lanes(int64_t live) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(live)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// attention_x86.h's vector operations with AVX2 and FMA: 8 floats a vector.
struct F32x8 {
  using Vector = __m256;
  static constexpr int64_t width = 8;
  NEEDLE_RT_AVX2 static void load(Vector &v, const float *p) { v = _mm256_loadu_ps(p); }
  NEEDLE_RT_AVX2 static void load(Vector &v, const float *p, int64_t live) {
    v = _mm256_maskload_ps(p, avx2_first_lanes(live));
  }
  NEEDLE_RT_AVX2 static void store(float *p, const Vector &v) { _mm256_storeu_ps(p, v); }
  NEEDLE_RT_AVX2 static void store(float *p, const Vector &v, int64_t live) {
    _mm256_maskstore_ps(p, avx2_first_lanes(live), v);
  }
  NEEDLE_RT_AVX2 static void broadcast(Vector &v, float scalar) { v = _mm256_set1_ps(scalar); }
  NEEDLE_RT_AVX2 static void fma(Vector &acc, const Vector &a, const Vector &b) { acc = _mm256_fmadd_ps(a, b, acc); }
  NEEDLE_RT_AVX2 static void scaled_store(float *p, const Vector &v, float factor) {
    _mm256_storeu_ps(p, _mm256_mul_ps(v, _mm256_set1_ps(factor)));
  }
};

/// attention_softmax_avx2's second half from scores[i] on: scores[i..count) ← e^(scores·factor −
/// shift), each added into the 8 lanes of sum, 8 at a time (then a masked tail); returns sum.
NEEDLE_RT_AVX2 inline __m256 attention_exps_avx2(float *scores, int64_t i, int64_t count, __m256 factor, __m256 shift,
                                                 __m256 sum) {
  for (; i + 8 <= count; i += 8) {
    const __m256 e = avx2_exp(_mm256_fmsub_ps(_mm256_loadu_ps(scores + i), factor, shift));
    _mm256_storeu_ps(scores + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < count) {
    const __m256i tail = avx2_first_lanes(count - i);
    const __m256 e = _mm256_and_ps(avx2_exp(_mm256_fmsub_ps(_mm256_maskload_ps(scores + i, tail), factor, shift)),
                                   _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(scores + i, tail, e);
    sum = _mm256_add_ps(sum, e);
  }
  return sum;
}

/// scores[0..count) ← e^(scores·scale − max), returns 1 / their sum (as attention_read's softmax,
/// 8 at a time).
NEEDLE_RT_AVX2 inline float attention_softmax_avx2(float *scores, int64_t count, float scale) {
  const __m256 factor = _mm256_set1_ps(scale);
  __m256 top = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    top = _mm256_max_ps(top, _mm256_loadu_ps(scores + i));
  const __m256i tail = avx2_first_lanes(count - i);
  if (i < count) // lanes past count stay -inf
    top = _mm256_max_ps(top, _mm256_blendv_ps(top, _mm256_maskload_ps(scores + i, tail), _mm256_castsi256_ps(tail)));
  const __m256 shift = _mm256_mul_ps(_mm256_set1_ps(avx2_lane_max(top)), factor);
  return 1.0f / avx2_lane_sum(attention_exps_avx2(scores, 0, count, factor, shift, _mm256_setzero_ps()));
}

/// The AVX2 blocks of attention_x86: heads in pairs (6 heads' sums of 4 vectors would need more
/// than the 16 registers).
struct AttentionAvx2 {
  static constexpr int64_t width = F32x8::width;
  static constexpr int most_heads = 2;
  NEEDLE_RT_AVX2 static float softmax(float *scores, int64_t count, float scale) {
    return attention_softmax_avx2(scores, count, scale);
  }
  template <int kHeads, int kVectors, bool kMasked = false>
  NEEDLE_RT_AVX2 static void score_block(const float *q, int64_t dqk, const float *k, int64_t capacity, float *scores,
                                         int64_t stride, int64_t live = width) {
    attention_score_block_x86<F32x8, kHeads, kVectors, kMasked>(q, dqk, k, capacity, scores, stride, live);
  }
  template <int kHeads, int kVectors>
  NEEDLE_RT_AVX2 static void value_block(const float *scores, int64_t count, const float *v, int64_t v_width,
                                         int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                         float *out) {
    attention_value_block_x86<F32x8, kHeads, kVectors>(scores, count, v, v_width, first_slot, capacity, inv_sum, dv,
                                                       out);
  }
  template <int kHeads>
  NEEDLE_RT_AVX2 static void scores(const float *q, int64_t dqk, const float *k, int64_t capacity, int64_t slots,
                                    float *scores, int64_t stride) {
    attention_scores_x86<AttentionAvx2, kHeads>(q, dqk, k, capacity, slots, scores, stride);
  }
  template <int kHeads>
  NEEDLE_RT_AVX2 static void values(const float *scores, int64_t count, const float *v, int64_t v_width,
                                    int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                    float *out) {
    attention_values_x86<AttentionAvx2, kHeads>(scores, count, v, v_width, first_slot, capacity, inv_sum, dv, out);
  }
};

/// attention with AVX2 and FMA where dv is a multiple of 8 (else attention_read). Scratch:
/// attention_scratch_floats(capacity, heads, kv_heads).
NEEDLE_RT_AVX2 inline void attention_avx2(const float *q, const float *k, const float *v, int64_t heads,
                                          int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window, int64_t capacity,
                                          int64_t t, float *k_cache, float *v_cache, float *scores, float *out) {
  attention_x86<AttentionAvx2>(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
}

} // namespace needle_rt
#endif
