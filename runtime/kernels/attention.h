// needle_rt, windowed GQA attention over a KV ring.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------

/// needle.attention at position t: grouped-query attention over a KV ring.
/// State: k_cache [kv_heads·dqk][capacity] (transposed: each dimension's values of consecutive
/// slots are adjacent, so the scores of many positions are one contiguous axpy per dimension) and
/// v_cache [capacity][kv_heads·dv]; position p lives in slot p % capacity. The call first stores
/// k [kv_heads·dqk] and v [kv_heads·dv] of position t, then query head h (q [heads·dqk]) reads kv
/// head h / (heads / kv_heads) (kv_heads divides heads, as the dialect's verifier requires) over
/// the visible positions first..t, first = 0 for window 0
/// (global) or max(0, t − window + 1):
///   o_h = Σ_p softmax_p(q_h·k_p / sqrt(dqk)) v_p,   out [heads·dv] = concat_h o_h.
/// Contract: capacity >= window for a local block, capacity >= max_seq_len for a global one;
/// first is raised to t − capacity + 1 if needed so no overwritten slot is ever read. Positions
/// 0, 1, 2, ... in order; the caches never need clearing. Scratch: scores,
/// attention_scratch_floats(capacity, heads, kv_heads) floats. out must not overlap q, k, v, the caches or scores.
struct AttentionSpan {
  int64_t first_slot, count; // the visible positions: count of them, from ring slot first_slot on
  /// How many of them lie before the ring's end (the rest wrap to slot 0).
  int64_t before_end(int64_t capacity) const { return first_slot + count <= capacity ? count : capacity - first_slot; }
};

/// attention's first half: stores k and v of position t in the rings; returns what t sees.
inline AttentionSpan attention_store(const float *k, const float *v, int64_t k_width, int64_t v_width, int64_t window,
                                     int64_t capacity, int64_t t, float *k_cache, float *v_cache) {
  const int64_t slot = t % capacity;
  for (int64_t j = 0; j < k_width; ++j)
    k_cache[j * capacity + slot] = k[j];
  std::memcpy(v_cache + slot * v_width, v, static_cast<size_t>(v_width) * sizeof(float));
  int64_t first = window == 0 ? 0 : (t - window + 1 > 0 ? t - window + 1 : 0);
  if (t - first + 1 > capacity)
    first = t - capacity + 1;
  return {first % capacity, t - first + 1};
}

/// attention's second half, over `span`.
inline void attention_read(const float *q, int64_t heads, int64_t kv_heads, int64_t dqk, int64_t dv, int64_t capacity,
                           AttentionSpan span, const float *k_cache, const float *v_cache, float *scores, float *out) {
  const int64_t v_width = kv_heads * dv, group = heads / kv_heads, count = span.count;
  // The span in position order, as two runs of consecutive slots: to the ring's end, then on from 0.
  const int64_t head = span.before_end(capacity);
  const int64_t runs[2][2] = {{span.first_slot, head}, {0, count - head}}; // (first slot, length)
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(dqk));
  for (int64_t h = 0; h < heads; ++h) {
    const float *qh = q + h * dqk;
    const int64_t kv = h / group;
    // Scores: per dimension, one axpy over the positions.
    for (int64_t i = 0; i < count; ++i)
      scores[i] = 0.0f;
    for (int64_t d = 0; d < dqk; ++d) {
      const float qd = qh[d], *kd = k_cache + (kv * dqk + d) * capacity;
      float *s = scores;
      for (const auto &run : runs) {
        for (int64_t i = 0; i < run[1]; ++i)
          s[i] += qd * kd[run[0] + i];
        s += run[1];
      }
    }
    // Max-shifted exp (so exp never overflows), and their sum.
    float top = -INFINITY;
    for (int64_t i = 0; i < count; ++i) {
      scores[i] *= inv_sqrt;
      top = scores[i] > top ? scores[i] : top;
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < count; ++i)
      sum += scores[i] = std::exp(scores[i] - top);
    // o_h = Σ e_p v_p / Σ e_p: one division per head instead of one per weight.
    float *oh = out + h * dv;
    for (int64_t e = 0; e < dv; ++e)
      oh[e] = 0.0f;
    for (int64_t i = 0, slot = span.first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
      const float *vp = v_cache + slot * v_width + kv * dv;
      for (int64_t e = 0; e < dv; ++e)
        oh[e] += scores[i] * vp[e];
    }
    const float inv_sum = 1.0f / sum;
    for (int64_t e = 0; e < dv; ++e)
      oh[e] *= inv_sum;
  }
}

} // namespace needle_rt
