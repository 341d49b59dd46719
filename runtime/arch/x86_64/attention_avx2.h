// needle_rt, attention with AVX2 and FMA.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// attention_read with AVX2 and FMA, query heads in pairs (two heads of one kv head): each key or
// value vector loaded feeds both heads, and 8 independent sums hide the FMA latency. The scores
// and the weighted values are summed in the portable kernel's order (over d per score, over the
// positions per output), fused; the softmax's normalizer is summed 8 lanes at a time.

/// The lanes of a vector below `live` (0..8): a mask for maskload / maskstore.
NEEDLE_RT_AVX2 inline __m256i avx2_first_lanes(int64_t live) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(live)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// acc[h][j] += b[h·b_stride] · vectors[j], for kHeads scalars and kVectors vectors.
template <int kHeads, int kVectors>
NEEDLE_RT_AVX2 inline void avx2_outer_fma(__m256 (&acc)[kHeads][kVectors], const __m256 (&vectors)[kVectors],
                                          const float *b, int64_t b_stride) {
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
    const __m256 scalar = _mm256_set1_ps(b[h * b_stride]);
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      acc[h][j] = _mm256_fmadd_ps(scalar, vectors[j], acc[h][j]);
  }
}

/// The scores of kHeads query heads (q: head after head, dqk each) for 8·kVectors consecutive
/// slots (k: the first slot's key of dimension 0, dimension d capacity floats further on), into
/// scores[h·stride + i]; kMasked: one vector, of the slots `live` selects only.
template <int kHeads, int kVectors, bool kMasked = false>
NEEDLE_RT_AVX2 inline void attention_score_block_avx2(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                      float *scores, int64_t stride, __m256i live = __m256i()) {
  static_assert(!kMasked || kVectors == 1, "a masked block is one vector");
  __m256 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t d = 0; d < dqk; ++d) {
    __m256 keys[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      keys[j] = kMasked ? _mm256_maskload_ps(k + d * capacity, live) : _mm256_loadu_ps(k + d * capacity + 8 * j);
    avx2_outer_fma(acc, keys, q + d, dqk);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      if (kMasked)
        _mm256_maskstore_ps(scores + h * stride, live, acc[h][j]);
      else
        _mm256_storeu_ps(scores + h * stride + 8 * j, acc[h][j]);
    }
}

/// The scores of kHeads query heads for `slots` consecutive slots from k (as above).
template <int kHeads>
NEEDLE_RT_AVX2 inline void attention_scores_avx2(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                 int64_t slots, float *scores, int64_t stride) {
  int64_t i = 0;
  for (; i + 32 <= slots; i += 32)
    attention_score_block_avx2<kHeads, 4>(q, dqk, k + i, capacity, scores + i, stride);
  for (; i + 8 <= slots; i += 8)
    attention_score_block_avx2<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride);
  if (i < slots)
    attention_score_block_avx2<kHeads, 1, true>(q, dqk, k + i, capacity, scores + i, stride,
                                                avx2_first_lanes(slots - i));
}

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

/// out[h·dv + 8j + l] = Σ_i scores[h·count + i] · v[slot_i][8j + l] · inv_sum[h] for kHeads heads
/// and 8·kVectors values (v: the kv head's first value of the block in slot 0; slots from
/// first_slot on, wrapping at capacity).
template <int kHeads, int kVectors>
NEEDLE_RT_AVX2 inline void attention_value_block_avx2(const float *scores, int64_t count, const float *v,
                                                      int64_t v_width, int64_t first_slot, int64_t capacity,
                                                      const float *inv_sum, int64_t dv, float *out) {
  __m256 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t i = 0, slot = first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
    __m256 values[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      values[j] = _mm256_loadu_ps(v + slot * v_width + 8 * j);
    avx2_outer_fma(acc, values, scores + i, count);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      _mm256_storeu_ps(out + h * dv + 8 * j, _mm256_mul_ps(acc[h][j], _mm256_set1_ps(inv_sum[h])));
}

/// The AVX2 blocks of attention_x86: the scores of kHeads query heads for `slots` consecutive
/// slots, and their weighted values for all dv (a multiple of 8); heads in pairs (6 heads' sums
/// of 4 vectors would need more than the 16 registers).
struct AttentionAvx2 {
  static constexpr int64_t width = 8;
  static constexpr int most_heads = 2;
  NEEDLE_RT_AVX2 static float softmax(float *scores, int64_t count, float scale) {
    return attention_softmax_avx2(scores, count, scale);
  }
  template <int kHeads>
  NEEDLE_RT_AVX2 static void scores(const float *q, int64_t dqk, const float *k, int64_t capacity, int64_t slots,
                                    float *scores, int64_t stride) {
    attention_scores_avx2<kHeads>(q, dqk, k, capacity, slots, scores, stride);
  }
  template <int kHeads>
  NEEDLE_RT_AVX2 static void values(const float *scores, int64_t count, const float *v, int64_t v_width,
                                    int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                    float *out) {
    int64_t e = 0;
    for (; e + 32 <= dv; e += 32)
      attention_value_block_avx2<kHeads, 4>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv, out + e);
    for (; e < dv; e += 8)
      attention_value_block_avx2<kHeads, 1>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv, out + e);
  }
};

/// attention_read for kHeads query heads of one kv head (q and out at the first head's; k and
/// v at the kv head's keys and values) on Blocks (AttentionAvx2, AttentionAvx512); dv is a
/// multiple of Blocks::width.
template <typename Blocks, int kHeads>
NEEDLE_RT_AVX2 inline void attention_heads_x86(const float *q, int64_t dqk, int64_t dv, int64_t v_width,
                                               int64_t capacity, AttentionSpan span, const float *k, const float *v,
                                               float *scores, float *out) {
  const int64_t count = span.count, head = span.before_end(capacity);
  Blocks::template scores<kHeads>(q, dqk, k + span.first_slot, capacity, head, scores, count);
  Blocks::template scores<kHeads>(q, dqk, k, capacity, count - head, scores + head, count);
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(dqk));
  float inv_sum[kHeads];
  for (int h = 0; h < kHeads; ++h)
    inv_sum[h] = Blocks::softmax(scores + h * count, count, inv_sqrt);
  Blocks::template values<kHeads>(scores, count, v, v_width, span.first_slot, capacity, inv_sum, dv, out);
}

/// attention on Blocks where dv is a multiple of Blocks::width (else attention_read): the query
/// heads of a kv head Blocks::most_heads at a time while that many are left, then in pairs, so a
/// key or value vector loaded feeds them all (the caches stream from L3 or L2 in a long decode).
/// Scratch: attention_scratch_floats(capacity, heads, kv_heads).
template <typename Blocks>
NEEDLE_RT_AVX2 inline void attention_x86(const float *q, const float *k, const float *v, int64_t heads,
                                         int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window, int64_t capacity,
                                         int64_t t, float *k_cache, float *v_cache, float *scores, float *out) {
  static_assert(Blocks::most_heads <= kAttentionMostHeads, "the scratch holds kAttentionMostHeads heads' scores");
  const int64_t v_width = kv_heads * dv, group = heads / kv_heads;
  const AttentionSpan span = attention_store(k, v, kv_heads * dqk, v_width, window, capacity, t, k_cache, v_cache);
  if (dv % Blocks::width != 0)
    return attention_read(q, heads, kv_heads, dqk, dv, capacity, span, k_cache, v_cache, scores, out);
  for (int64_t h = 0; h < heads;) {
    const int64_t kv = h / group, left = (kv + 1) * group - h; // heads from h on that read kv head kv
    const float *keys = k_cache + kv * dqk * capacity, *values = v_cache + kv * dv, *qh = q + h * dqk;
    float *oh = out + h * dv;
    const int taken = left >= Blocks::most_heads ? Blocks::most_heads : left >= 2 ? 2 : 1;
    if (taken == Blocks::most_heads)
      attention_heads_x86<Blocks, Blocks::most_heads>(qh, dqk, dv, v_width, capacity, span, keys, values, scores, oh);
    else if (taken == 2)
      attention_heads_x86<Blocks, 2>(qh, dqk, dv, v_width, capacity, span, keys, values, scores, oh);
    else
      attention_heads_x86<Blocks, 1>(qh, dqk, dv, v_width, capacity, span, keys, values, scores, oh);
    h += taken;
  }
}

/// attention with AVX2 and FMA where dv is a multiple of 8 (else attention_read). Scratch:
/// attention_scratch_floats(capacity, heads, kv_heads).
NEEDLE_RT_AVX2 inline void attention_avx2(const float *q, const float *k, const float *v, int64_t heads,
                                          int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window, int64_t capacity,
                                          int64_t t, float *k_cache, float *v_cache, float *scores, float *out) {
  attention_x86<AttentionAvx2>(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
}

} // namespace needle_rt
#endif
