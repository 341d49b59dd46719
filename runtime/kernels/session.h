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

// What NAME_open writes into the header: the format's version, the model's sizes and its
// fingerprint (its weights, its build and needlec's version), so a never-opened arena, a
// corrupted one, another model's session or a saved image of one is refused
// (docs/c-interface.md, "Sessions that are not sessions" and "Saving and restoring a session").
inline uint64_t session_tag(const ModelFacts &m) {
  const uint64_t version = 7;                   // 7: the header names the prompt prefix a request fed
  uint64_t tag = 0x4E444C5345535300u | version; // "NDLSESS" and the version
  const uint64_t facts[] = {
      static_cast<uint64_t>(m.arena_size),   static_cast<uint64_t>(m.outputs_end), static_cast<uint64_t>(m.max_seq_len),
      static_cast<uint64_t>(m.vocab_size),   static_cast<uint64_t>(m.logits),      m.fingerprint,
      static_cast<uint64_t>(m.max_rollback), static_cast<uint64_t>(m.depth),       static_cast<uint64_t>(m.token_log)};
  for (uint64_t fact : facts)
    tag = (tag ^ fact) * 0x100000001B3u;
  return tag;
}

// The header of arena when it holds an open session of m, else null; reads nothing past it.
inline SessionHeader *checked_session(const ModelFacts &m, const void *arena) {
  if (!arena || reinterpret_cast<uintptr_t>(arena) % static_cast<uintptr_t>(m.arena_align))
    return nullptr;
  SessionHeader *h = static_cast<SessionHeader *>(const_cast<void *>(arena));
  const bool counts_hold = 0 <= h->position && h->position <= h->high_water && h->high_water <= m.max_seq_len;
  return h->tag == session_tag(m) && h->depth == m.depth && counts_hold ? h : nullptr;
}

// Whether bytes [p, p + size) overlap the session's arena, which the model writes while it reads them.
inline bool in_arena(const ModelFacts &m, const void *arena, const void *p, size_t size) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(arena), at = reinterpret_cast<uintptr_t>(p);
  return at < begin + static_cast<uintptr_t>(m.arena_size) && begin < at + size;
}

// The header, every op's state and the outputs are zeroed; the KV, tap and token rings, and the
// token log, are only ever read at positions written since.
inline void reset_arena(const ModelFacts &m, void *arena, uint64_t capacity) {
  unsigned char *bytes = static_cast<unsigned char *>(arena);
  if (m.token_log) {
    const int64_t after = m.token_log + token_log_bytes(m.max_seq_len);
    std::memset(bytes, 0, static_cast<size_t>(m.token_log));
    std::memset(bytes + after, 0, static_cast<size_t>(m.outputs_end - after));
  } else {
    std::memset(bytes, 0, static_cast<size_t>(m.outputs_end));
  }
  SessionHeader *h = static_cast<SessionHeader *>(arena);
  h->tag = session_tag(m);
  h->depth = static_cast<int32_t>(m.depth);
  h->capacity = capacity;
}

// A session image copied into arena (docs/c-interface.md, "Saving and restoring a session").
// The image's pool belonged to the process that saved it: the session starts without one.
inline void *session_restore(const ModelFacts &m, void *arena, size_t size) {
  SessionHeader *h = size >= static_cast<size_t>(m.arena_size) ? checked_session(m, arena) : nullptr;
  if (h) {
    h->parallel = Parallel{};
    h->capacity = size;
  }
  return h;
}

// Forgets the tokens, keeps the pool.
inline void session_reset(const ModelFacts &m, void *arena) {
  if (SessionHeader *h = checked_session(m, arena)) {
    const Parallel pool = h->parallel;
    reset_arena(m, arena, h->capacity);
    h->parallel = pool;
  }
}

inline int session_set_parallel(const ModelFacts &m, void *arena, const Parallel *p) {
  SessionHeader *h = checked_session(m, arena);
  const bool pooled = p && p->workers > 1;
  if (!h || (pooled && !p->parallel_for))
    return status_err_arg;
  h->parallel = pooled ? *p : Parallel{};
  return status_ok;
}

// A parallel stage of @step: tasks [0, count) of fn on the session's pool, or in order on this
// thread without one. The tasks of a stage touch disjoint outputs, so either way gives the same
// bytes.
inline void run_tasks(unsigned char *arena, TaskFunction fn, void *context, uint32_t count) {
  const Parallel &p = reinterpret_cast<const SessionHeader *>(arena)->parallel;
  if (p.workers > 1 && count > 1) {
    p.parallel_for(p.pool, fn, context, count);
    return;
  }
  for (uint32_t i = 0; i < count; ++i)
    fn(context, i);
}

inline void *session_open(const ModelFacts &m, void *arena, size_t size) {
  if (!arena || size < static_cast<size_t>(m.arena_size) ||
      reinterpret_cast<uintptr_t>(arena) % static_cast<uintptr_t>(m.arena_align))
    return nullptr;
  reset_arena(m, arena, size);
  return arena;
}

// tokens[0..n) through the step in runs of at most m.batch, logged when m keeps a token log;
// they are checked, and fit. `tokens` may be the log itself, from the position on.
inline void feed_tokens(const ModelFacts &m, StepFunction step, void *arena, const int32_t *tokens, size_t n) {
  SessionHeader *h = static_cast<SessionHeader *>(arena);
  if (m.token_log) {
    int32_t *log = reinterpret_cast<int32_t *>(static_cast<unsigned char *>(arena) + m.token_log) + h->position;
    if (n && tokens != log)
      std::memcpy(log, tokens, n * sizeof(int32_t));
  }
  for (size_t i = 0; i < n;) {
    const int64_t count = static_cast<int64_t>(n - i) < m.batch ? static_cast<int64_t>(n - i) : m.batch;
    step(static_cast<unsigned char *>(arena), tokens + i, count, h->position);
    h->position += count;
    i += static_cast<size_t>(count);
  }
  if (h->high_water < h->position)
    h->high_water = static_cast<int32_t>(h->position);
}

// Every token is checked before any is fed, so an error leaves the session as it was.
inline int session_feed(const ModelFacts &m, StepFunction step, void *arena, const int32_t *tokens, size_t n) {
  SessionHeader *h = checked_session(m, arena);
  if (!h || (n && (!tokens || in_arena(m, arena, tokens, n * sizeof(int32_t)))))
    return status_err_arg;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= m.vocab_size)
      return status_err_token;
  if (n > static_cast<size_t>(m.max_seq_len - h->position))
    return status_err_full;
  feed_tokens(m, step, arena, tokens, n);
  return status_ok;
}

// Keeps the first `position` tokens (docs/c-interface.md, "Taking tokens back"). The rings hold
// max_rollback positions more than they read and each head snapshots its pooling state before
// every position (head_pool_snapshot), so going back to any position at least high_water −
// max_rollback only needs the heads' states put back: every slot a later position reads is then
// either still there or rewritten before it is read.
inline int session_truncate(const ModelFacts &m, void *arena, size_t position) {
  SessionHeader *h = checked_session(m, arena);
  if (!h || position > static_cast<size_t>(h->position))
    return status_err_arg;
  const int64_t p = static_cast<int64_t>(position);
  if (p == h->position)
    return status_ok;
  if (p == 0) {
    session_reset(m, arena);
    return status_ok;
  }
  if (h->high_water - p > m.max_rollback)
    return status_err_arena;
  unsigned char *bytes = static_cast<unsigned char *>(arena);
  for (int64_t i = 0; i < m.pool_count; ++i) {
    float *state = reinterpret_cast<float *>(bytes + m.pools[2 * i]);
    const int64_t floats = m.pools[2 * i + 1];
    std::memcpy(state, state + floats * (1 + p % m.max_rollback), static_cast<size_t>(floats) * sizeof(float));
  }
  // The logits were the last token's, which is gone: zero until the next feed, as before the first.
  std::memset(bytes + m.logits, 0, static_cast<size_t>(m.vocab_size) * sizeof(float));
  h->position = p;
  h->request_prefix = 0; // a request that fed one says so again when it knows the prefix is kept
  return status_ok;
}

inline const float *session_logits(const ModelFacts &m, const void *arena) {
  return checked_session(m, arena)
             ? reinterpret_cast<const float *>(static_cast<const unsigned char *>(arena) + m.logits)
             : nullptr;
}

inline float session_confidence(const ModelFacts &m, HeadFunction head, const void *arena) {
  const SessionHeader *h = checked_session(m, arena);
  if (!h)
    return 0.0f;
  if (h->position == 0) // before any token: sigmoid of the bias
    return sigmoid(m.confidence_bias);
  float confidence = 0.0f;
  head(static_cast<const unsigned char *>(arena), &confidence);
  return confidence;
}

inline int session_embedding(const ModelFacts &m, HeadFunction head, const void *arena, float *out) {
  const SessionHeader *h = checked_session(m, arena);
  const size_t bytes = static_cast<size_t>(m.embedding_dim) * sizeof(float);
  if (!h || !out || in_arena(m, arena, out, bytes))
    return status_err_arg;
  if (h->position == 0) // before any token: zeros
    std::memset(out, 0, bytes);
  else
    head(static_cast<const unsigned char *>(arena), out);
  return status_ok;
}

inline size_t session_position(const ModelFacts &m, const void *arena) {
  const SessionHeader *h = checked_session(m, arena);
  return h ? static_cast<size_t>(h->position) : 0;
}

} // namespace needle_rt
