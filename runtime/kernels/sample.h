// needle_rt, the sampler behind NAME_sample (docs/c-interface.md, "Sampling").
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

/// needle_sample_params of the header, field for field.
struct SampleParams {
  float temperature;
  uint32_t top_k;
  float top_p;
  float min_p;
  float repetition_penalty;
  const int32_t *recent;
  size_t recent_count;
};

/// needle_rng of the header: a splitmix64 state.
struct SampleRng {
  uint64_t state;
};

/// One candidate in the scratch: its value (a logit, then a probability) and its token id.
struct Candidate {
  float value;
  int32_t id;
};

/// The next splitmix64 output as a fraction in [0, 1) of 24 bits: exact in a float on every target.
inline float rng_fraction(SampleRng *rng) {
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  z ^= z >> 31;
  // Through uint32_t: a 64-bit conversion would be a libgcc call on armv7.
  return static_cast<float>(static_cast<uint32_t>(z >> 40)) * (1.0f / 16777216.0f);
}

/// The sampler's order: the larger value first, the lower id on a tie, so the kept set and the
/// draw never depend on the order of work.
inline bool ranks_before(const Candidate &a, const Candidate &b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

/// CTRL's repetition penalty on one logit.
inline float penalized(float logit, float penalty) { return logit > 0.0f ? logit / penalty : logit * penalty; }

/// Restores the heap property of c[0..n) (the entry ranked last on top) below `at`.
inline void sift_down_last_on_top(Candidate *c, size_t n, size_t at) {
  for (size_t child = 2 * at + 1; child < n; at = child, child = 2 * at + 1) {
    if (child + 1 < n && ranks_before(c[child], c[child + 1]))
      ++child; // the one ranked later
    if (!ranks_before(c[at], c[child]))
      return;
    const Candidate t = c[at];
    c[at] = c[child];
    c[child] = t;
  }
}

/// Moves the k entries ranked first among c[0..n) to c[0..k) (in no order): a heap of the k best
/// so far, the worst on top, replaced by each later entry ranked before it.
inline void keep_top_k(Candidate *c, size_t n, size_t k) {
  for (size_t i = k / 2; i-- > 0;)
    sift_down_last_on_top(c, k, i);
  for (size_t i = k; i < n; ++i)
    if (ranks_before(c[i], c[0])) {
      c[0] = c[i];
      sift_down_last_on_top(c, k, 0);
    }
}

/// Sorts c[0..n) in rank order, in place (heap sort: no recursion, no allocation): the heap's top,
/// the last-ranked left, goes to the back each time.
inline void sort_by_rank(Candidate *c, size_t n) {
  for (size_t i = n / 2; i-- > 0;)
    sift_down_last_on_top(c, n, i);
  for (size_t end = n; end > 1; --end) {
    const Candidate t = c[0];
    c[0] = c[end - 1];
    c[end - 1] = t;
    sift_down_last_on_top(c, end - 1, 0);
  }
}

inline bool sample_params_valid(const SampleParams &p) {
  const float values[] = {p.temperature, p.top_p, p.min_p, p.repetition_penalty};
  for (float v : values)
    if (v != v) // NaN
      return false;
  return p.top_p >= 0.0f && p.min_p >= 0.0f && p.repetition_penalty > 0.0f && (p.recent || !p.recent_count);
}

/// The candidates in id order, each recent token's logit penalized once however often it occurs.
inline void fill_candidates(const float *logits, int64_t vocab_size, const SampleParams &p, Candidate *c) {
  for (int64_t i = 0; i < vocab_size; ++i)
    c[i] = {logits[i], static_cast<int32_t>(i)};
  if (p.repetition_penalty == 1.0f)
    return;
  for (size_t r = 0; r < p.recent_count; ++r) {
    Candidate &e = c[p.recent[r]];
    if (e.id >= 0) { // not yet penalized: mark it so by a negative id
      e.value = penalized(e.value, p.repetition_penalty);
      e.id = -1 - e.id;
    }
  }
  for (size_t r = 0; r < p.recent_count; ++r)
    c[p.recent[r]].id = p.recent[r];
}

/// The index of the first-ranked of c[0..n).
inline size_t first_ranked(const Candidate *c, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (ranks_before(c[i], c[best]))
      best = i;
  return best;
}

/// The draw from c[0..n): top-k, the tempered softmax, top-p, min-p, then one fraction.
inline int32_t draw(Candidate *c, size_t n, const SampleParams &p, SampleRng *rng) {
  if (p.top_k > 0 && p.top_k < n) {
    keep_top_k(c, n, p.top_k);
    n = p.top_k;
  }
  const bool nucleus = p.top_p < 1.0f;
  if (nucleus)
    sort_by_rank(c, n);
  // The largest subtracted before the temperature divides: every exponent is <= 0 and finite
  // or -inf, however small the temperature; the likeliest's weight is exactly 1.
  const float top = c[first_ranked(c, n)].value;
  float total = 0.0f;
  for (size_t i = 0; i < n; ++i)
    total += c[i].value = std::exp((c[i].value - top) / p.temperature);
  if (nucleus) {
    const float reach = p.top_p * total;
    float sum = 0.0f;
    size_t kept = 0;
    while (kept < n && (kept == 0 || sum < reach))
      sum += c[kept++].value;
    n = kept;
    total = sum;
  }
  if (p.min_p > 0.0f) {
    const float floor = p.min_p < 1.0f ? p.min_p : 1.0f; // the likeliest (weight 1) always stays
    size_t kept = 0;
    total = 0.0f;
    for (size_t i = 0; i < n; ++i)
      if (c[i].value >= floor)
        total += (c[kept++] = c[i]).value;
    n = kept;
  }
  const float target = rng_fraction(rng) * total;
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    sum += c[i].value;
    if (sum > target)
      return c[i].id;
  }
  return c[n - 1].id; // rounding left the target at the very end
}

inline size_t sample_scratch_size(const ModelFacts &m) { return static_cast<size_t>(m.vocab_size) * sizeof(Candidate); }

inline int session_sample(const ModelFacts &m, const void *arena, const SampleParams *params, SampleRng *rng,
                          void *scratch, size_t scratch_size, int32_t *token) {
  const float *logits = session_logits(m, arena);
  if (!logits || !token)
    return status_err_arg;
  const SampleParams greedy = {0.0f, 0, 1.0f, 0.0f, 1.0f, nullptr, 0};
  const SampleParams &p = params ? *params : greedy;
  if (!sample_params_valid(p))
    return status_err_arg;
  for (size_t r = 0; r < p.recent_count; ++r)
    if (p.recent[r] < 0 || p.recent[r] >= m.vocab_size)
      return status_err_token;
  const bool plain_greedy = p.temperature <= 0.0f && p.repetition_penalty == 1.0f;
  if (plain_greedy) {
    size_t best = 0;
    for (size_t i = 1; i < static_cast<size_t>(m.vocab_size); ++i)
      if (logits[i] > logits[best])
        best = i;
    *token = static_cast<int32_t>(best);
    return status_ok;
  }
  const size_t bytes = sample_scratch_size(m);
  if (!scratch || scratch_size < bytes || reinterpret_cast<uintptr_t>(scratch) % alignof(Candidate) ||
      in_arena(m, arena, scratch, bytes) || (p.temperature > 0.0f && !rng))
    return status_err_arg;
  Candidate *c = static_cast<Candidate *>(scratch);
  fill_candidates(logits, m.vocab_size, p, c);
  *token = p.temperature <= 0.0f ? c[first_ranked(c, static_cast<size_t>(m.vocab_size))].id
                                 : draw(c, static_cast<size_t>(m.vocab_size), p, rng);
  return status_ok;
}

} // namespace needle_rt
