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
/// State: ring [capacity][n] with capacity = stride·(count − 1) (taps_state_floats); the input of
/// position p sits in slot p % capacity. The oldest term x_{t−capacity} is in slot t % capacity,
/// which is read and then overwritten with x_t element by element, so a call both uses and
/// updates the ring. Positions must be fed 0, 1, 2, ... with no gap; the ring never needs
/// clearing (slots are only read for positions >= 0 already written). count = 1 needs no ring.
/// out may equal x.
inline void causal_taps(const float *x, int64_t n, const float *taps, int64_t count, int64_t stride, float *ring,
                        int64_t t, float *out) {
  const int64_t capacity = stride * (count - 1);
  if (capacity == 0) {
    for (int64_t e = 0; e < n; ++e)
      out[e] = taps[e] * x[e];
    return;
  }
  float *oldest = ring + (t % capacity) * n;
  const float *oldest_tap = taps + (count - 1) * n;
  const bool has_oldest = t >= capacity;
  for (int64_t e = 0; e < n; ++e) {
    const float xe = x[e], old = oldest[e];
    oldest[e] = xe;
    out[e] = taps[e] * xe + (has_oldest ? oldest_tap[e] * old : 0.0f);
  }
  for (int64_t i = 1; i < count - 1 && t - stride * i >= 0; ++i) {
    const float *past = ring + ((t - stride * i) % capacity) * n, *tap = taps + i * n;
    for (int64_t e = 0; e < n; ++e)
      out[e] += tap[e] * past[e];
  }
}

} // namespace needle_rt
