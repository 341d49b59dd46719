// needle_rt, attention on x86, written once over the vector width: the blocks, the driver.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// attention_read on x86, query heads several at a time (heads of one kv head): each key or value
// vector loaded feeds them all, and independent sums hide the FMA latency. The scores and the
// weighted values are summed in the portable kernel's order (over d per score, over the positions
// per output), fused, so every width gives the same floats.
//
// The blocks are written once over V, an instruction set's vector operations (F32x8 for AVX2 and
// FMA, F32x16 for AVX-512F): V::Vector of V::width floats; broadcast, load, store (of the
// first `live` lanes when given), fma (acc += a · b) and scaled_store. The operations take vectors by
// reference: these blocks carry no target attribute (they are inlined into each instruction
// set's kernel, which carries it), and a vector passed by value through a function without AVX
// changes the ABI.

/// acc[h][j] += b[h·b_stride] · vectors[j], for kHeads scalars and kVectors vectors.
template <typename V, int kHeads, int kVectors>
NEEDLE_RT_INLINE_INTO_CALLER void outer_fma_x86(typename V::Vector (&acc)[kHeads][kVectors],
                                                const typename V::Vector (&vectors)[kVectors], const float *b,
                                                int64_t b_stride) {
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
    typename V::Vector scalar;
    V::broadcast(scalar, b[h * b_stride]);
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      V::fma(acc[h][j], scalar, vectors[j]);
  }
}

/// The scores of kHeads query heads (q: head after head, dqk each) for V::width·kVectors
/// consecutive slots (k: the first slot's key of dimension 0, dimension d capacity floats further
/// on), into scores[h·stride + i]; kMasked: one vector, of its first `live` slots only.
template <typename V, int kHeads, int kVectors, bool kMasked = false>
NEEDLE_RT_INLINE_INTO_CALLER void attention_score_block_x86(const float *q, int64_t dqk, const float *k,
                                                            int64_t capacity, float *scores, int64_t stride,
                                                            int64_t live = V::width) {
  static_assert(!kMasked || kVectors == 1, "a masked block is one vector");
  typename V::Vector acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t d = 0; d < dqk; ++d) {
    typename V::Vector keys[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      if (kMasked)
        V::load(keys[j], k + d * capacity, live);
      else
        V::load(keys[j], k + d * capacity + V::width * j);
    }
    outer_fma_x86<V>(acc, keys, q + d, dqk);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      if (kMasked)
        V::store(scores + h * stride, acc[h][j], live);
      else
        V::store(scores + h * stride + V::width * j, acc[h][j]);
    }
}

/// out[h·dv + w·j + l] = Σ_i scores[h·count + i] · v[slot_i][w·j + l] · inv_sum[h] for kHeads
/// heads and w·kVectors values, w = V::width (v: the kv head's first value of the block in slot 0;
/// slots from first_slot on, wrapping at capacity).
template <typename V, int kHeads, int kVectors>
NEEDLE_RT_INLINE_INTO_CALLER void attention_value_block_x86(const float *scores, int64_t count, const float *v,
                                                            int64_t v_width, int64_t first_slot, int64_t capacity,
                                                            const float *inv_sum, int64_t dv, float *out) {
  typename V::Vector acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t i = 0, slot = first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
    typename V::Vector values[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      V::load(values[j], v + slot * v_width + V::width * j);
    outer_fma_x86<V>(acc, values, scores + i, count);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      V::scaled_store(out + h * dv + V::width * j, acc[h][j], inv_sum[h]);
}

/// The scores of kHeads query heads for `slots` consecutive slots from k (as above), by Blocks'
/// score blocks (attention_score_block_x86 with its target attribute): of 4 vectors, then of
/// one, then a masked one.
template <typename Blocks, int kHeads>
NEEDLE_RT_INLINE_INTO_CALLER void attention_scores_x86(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                       int64_t slots, float *scores, int64_t stride) {
  constexpr int64_t width = Blocks::width;
  int64_t i = 0;
  for (; i + 4 * width <= slots; i += 4 * width)
    Blocks::template score_block<kHeads, 4>(q, dqk, k + i, capacity, scores + i, stride);
  for (; i + width <= slots; i += width)
    Blocks::template score_block<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride);
  if (i < slots)
    Blocks::template score_block<kHeads, 1, true>(q, dqk, k + i, capacity, scores + i, stride, slots - i);
}

/// The weighted values of kHeads query heads for all dv (a multiple of Blocks::width), by Blocks'
/// value blocks: of 4 vectors, then of one.
template <typename Blocks, int kHeads>
NEEDLE_RT_INLINE_INTO_CALLER void attention_values_x86(const float *scores, int64_t count, const float *v,
                                                       int64_t v_width, int64_t first_slot, int64_t capacity,
                                                       const float *inv_sum, int64_t dv, float *out) {
  constexpr int64_t width = Blocks::width;
  int64_t e = 0;
  for (; e + 4 * width <= dv; e += 4 * width)
    Blocks::template value_block<kHeads, 4>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv, out + e);
  for (; e < dv; e += width)
    Blocks::template value_block<kHeads, 1>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv, out + e);
}

/// attention_read for kHeads query heads of one kv head (q and out at the first head's; k and
/// v at the kv head's keys and values) on Blocks (AttentionAvx2, AttentionAvx512: an instruction
/// set's blocks, scores, softmax and values, each carrying its target attribute: the blocks are
/// functions of their own, so each keeps its accumulators in registers); dv is a multiple of
/// Blocks::width.
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

} // namespace needle_rt
#endif
