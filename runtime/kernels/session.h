// needle_rt, the session behind the C interface.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// The session behind the C interface (docs/c-interface.md), shared by both backends: the
// emitted model supplies its facts and its step; these check the arguments and keep the header.
// ---------------------------------------------------------------------------------------------

// The header, every op's state and the outputs are zeroed; the KV, tap and token rings are only
// ever read at positions written since.
inline void session_reset(const ModelFacts &m, void *arena) {
  if (arena)
    std::memset(arena, 0, static_cast<size_t>(m.outputs_end));
}

inline void *session_open(const ModelFacts &m, void *arena, size_t size) {
  if (!arena || size < static_cast<size_t>(m.arena_size) ||
      reinterpret_cast<uintptr_t>(arena) % static_cast<uintptr_t>(m.arena_align))
    return nullptr;
  session_reset(m, arena);
  return arena;
}

// Every token is checked before any is fed, so an error leaves the session as it was.
inline int session_feed(const ModelFacts &m, StepFunction step, void *arena, const int32_t *tokens, size_t n) {
  if (!arena || (!tokens && n))
    return status_err_arg;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= m.vocab_size)
      return status_err_token;
  SessionHeader *h = static_cast<SessionHeader *>(arena);
  if (n > static_cast<size_t>(m.max_seq_len - h->position))
    return status_err_full;
  for (size_t i = 0; i < n;) {
    const int64_t count = static_cast<int64_t>(n - i) < m.batch ? static_cast<int64_t>(n - i) : m.batch;
    step(static_cast<unsigned char *>(arena), tokens + i, count, h->position);
    h->position += count;
    i += static_cast<size_t>(count);
  }
  return status_ok;
}

inline const float *session_logits(const ModelFacts &m, const void *arena) {
  return arena ? reinterpret_cast<const float *>(static_cast<const unsigned char *>(arena) + m.logits) : nullptr;
}

inline float session_confidence(const ModelFacts &m, HeadFunction head, const void *arena) {
  if (!arena)
    return 0.0f;
  if (static_cast<const SessionHeader *>(arena)->position == 0) // before any token: sigmoid of the bias
    return sigmoid(m.confidence_bias);
  float confidence = 0.0f;
  head(static_cast<const unsigned char *>(arena), &confidence);
  return confidence;
}

inline int session_embedding(const ModelFacts &m, HeadFunction head, const void *arena, float *out) {
  if (!arena || !out)
    return status_err_arg;
  if (static_cast<const SessionHeader *>(arena)->position == 0) // before any token: zeros
    std::memset(out, 0, static_cast<size_t>(m.embedding_dim) * sizeof(float));
  else
    head(static_cast<const unsigned char *>(arena), out);
  return status_ok;
}

inline size_t session_position(const void *arena) {
  return arena ? static_cast<size_t>(static_cast<const SessionHeader *>(arena)->position) : 0;
}

} // namespace needle_rt
