// needle_rt, causal taps.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Causal taps
// ---------------------------------------------------------------------------------------------

/// needle.causal_taps at position t: out = Σ_{i<count} taps[i] ⊙ x_{t − stride·i} over the terms
/// with t − stride·i >= 0, taps [count][n].
/// State: ring [capacity][n], capacity = taps_capacity(count, stride, rollback) (count = 1 needs
/// no ring); the input of position p sits in slot p % capacity. Positions must be fed in order
/// with no gap, except that a session may go back up to `rollback` positions (the ring keeps that
/// many more); the ring never needs clearing (slots are only read for positions >= 0 already
/// written). The terms are summed in one order whatever the capacity: i = 0, count − 1, then
/// 1 … count − 2. out may equal x.
inline void causal_taps(const float *x, int64_t n, const float *taps, int64_t count, int64_t stride, int64_t capacity,
                        float *ring, int64_t t, float *out) {
  if (capacity == 0) {
    for (int64_t e = 0; e < n; ++e)
      out[e] = taps[e] * x[e];
    return;
  }
  // The oldest term x_{t − span}. Without rollback (capacity = span) it is in slot t % capacity,
  // read and then overwritten with x_t element by element; with rollback x_t has a slot of its own.
  const int64_t span = stride * (count - 1);
  float *newest = ring + (t % capacity) * n;
  const float *oldest = ring + ((t - span) % capacity + capacity) % capacity * n, *oldest_tap = taps + (count - 1) * n;
  const bool has_oldest = t >= span;
  for (int64_t e = 0; e < n; ++e) {
    const float xe = x[e], old = oldest[e];
    newest[e] = xe;
    out[e] = taps[e] * xe + (has_oldest ? oldest_tap[e] * old : 0.0f);
  }
  for (int64_t i = 1; i < count - 1 && t - stride * i >= 0; ++i) {
    const float *past = ring + ((t - stride * i) % capacity) * n, *tap = taps + i * n;
    for (int64_t e = 0; e < n; ++e)
      out[e] += tap[e] * past[e];
  }
}

} // namespace needle_rt
