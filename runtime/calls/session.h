// NAME_call and NAME_extract on a session (docs/c-interface.md, "Calls", "Records"): call_decode's
// model, on the session's functions, the compiled tokenizer and the scratch the compiler added at
// the end of the arena. Both backends define NAME_call and NAME_extract with it: the object's runtime
// (needle_object.cpp) and the C++ source, which carries this header joined after the runtime and the tokenizer's.
#ifndef NEEDLE_RT_CALLS_SESSION_H
#define NEEDLE_RT_CALLS_SESSION_H

#include "../needle_runtime.h"
#include "../tokenizer/tokenizer.h"
#include "calls.h"
#include "routes.h"

namespace needle_rt {

struct CallSession {
  const ModelFacts &facts;
  StepFunction step;
  HeadFunction confidence_head, embedding_head;
  TokTables tokenizer;
  const CallImage &calls;
  void *session;

  bool valid() const { return checked_session(facts, session) != nullptr; }
  /// Whether [p, p + size) overlaps the arena, which NAME_call writes while it reads or writes them.
  bool in_arena(const void *p, size_t size) const { return needle_rt::in_arena(facts, session, p, size); }
  void reset() { session_reset(facts, session); }
  int feed(const int32_t *ids, size_t n) { return session_feed(facts, step, session, ids, n); }
  const float *logits() const { return session_logits(facts, session); }
  float confidence() const { return session_confidence(facts, confidence_head, session); }
  int64_t depth() const { return facts.depth; }
  /// The session's embedding, into the request's scratch (which session_embedding refuses: it is
  /// in the arena); zeros before any token.
  void embedding(float *out) const {
    if (session_position(facts, session) == 0)
      std::memset(out, 0, size_t(facts.embedding_dim) * sizeof(float));
    else
      embedding_head(static_cast<const unsigned char *>(session), out);
  }
  size_t position() const { return session_position(facts, session); }
  size_t max_seq() const { return size_t(facts.max_seq_len); }
  void keep_probability(float p) { header()->call_probability = p; }
  /// Whether the session holds the prompt prefix `key` (`count` tokens) as a request fed it, and
  /// could go back to its end (NAME_truncate); it then has, and keeps no call. Otherwise nothing
  /// changed.
  bool resume_prefix(uint32_t key, size_t count) {
    SessionHeader *h = header();
    if (h->request_prefix != key || position() < count || session_truncate(facts, session, count) != status_ok)
      return false;
    h->request_prefix = key;
    h->call_probability = 0;
    return true;
  }
  /// The session holds the prompt prefix `key`, fed from its start by request_prompt.
  void mark_prefix(uint32_t key) { header()->request_prefix = key; }
  SessionHeader *header() const { return static_cast<SessionHeader *>(session); }
  /// The query, its special tokens' texts taken as text: a user cannot type the prompt's tokens.
  int encode(const char *text, size_t length, void *scratch, int32_t *ids, size_t cap, size_t *count) const {
    return tok_encode(tokenizer, text, length, 0, scratch, calls.route_offset - calls.encode_offset, ids, cap, count);
  }
  int token_bytes(int32_t id, const char **bytes, size_t *length) const {
    return tok_token_bytes(tokenizer, id, bytes, length);
  }
  unsigned char *scratch() const {
    return static_cast<unsigned char *>(session) + facts.arena_size - calls.scratch_bytes;
  }
};

/// A request's model: the session at its rung, with the tokenizer's and the automaton's images.
inline CallSession call_session(const Rung &r, const uint8_t *tokenizer, const CallTables &t, void *session) {
  return {r.facts, r.step, r.confidence_head, r.embedding_head, tok_tables(tokenizer), *t.header, session};
}

inline int session_call(const Rung &r, const uint8_t *tokenizer, const uint8_t *calls, void *session, const char *text,
                        size_t length, float threshold, char *out, size_t cap, size_t *out_length, float *confidence) {
  const CallTables t = call_tables(calls);
  CallSession m = call_session(r, tokenizer, t, session);
  return call_decode(t, m, text, length, threshold, out, cap, out_length, confidence);
}

/// NAME_call_top_k.
inline int session_call_top_k(const Rung &r, const uint8_t *tokenizer, const uint8_t *calls, void *session,
                              const char *text, size_t length, float threshold, uint32_t top_k, char *out, size_t cap,
                              size_t *out_length, float *confidence) {
  const CallTables t = call_tables(calls);
  CallSession m = call_session(r, tokenizer, t, session);
  return call_top_k_decode(t, m, text, length, threshold, top_k, out, cap, out_length, confidence);
}

/// NAME_call_rank.
inline int session_call_rank(const Rung &r, const uint8_t *tokenizer, const uint8_t *calls, void *session,
                             const char *text, size_t length, uint32_t *order, size_t count) {
  const CallTables t = call_tables(calls);
  CallSession m = call_session(r, tokenizer, t, session);
  return call_rank(t, m, text, length, order, count);
}

/// NAME_extract on the record automaton's image `records`.
inline int session_extract(const Rung &r, const uint8_t *tokenizer, const uint8_t *records, void *session,
                           const char *text, size_t length, char *out, size_t cap, size_t *out_length) {
  const CallTables t = call_tables(records);
  CallSession m = call_session(r, tokenizer, t, session);
  return record_decode(t, m, text, length, out, cap, out_length);
}

/// NAME_call_probability: what the session's last NAME_call kept, 0 for none or a non-session.
inline float session_call_probability(const ModelFacts &facts, const void *session) {
  const SessionHeader *h = checked_session(facts, session);
  return h ? h->call_probability : 0.0f;
}

} // namespace needle_rt

#endif // NEEDLE_RT_CALLS_SESSION_H
