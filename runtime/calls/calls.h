// The tool-call automaton's runtime (docs/tool-calls.md): which tokens keep a call valid, and
// where each leads, read from read-only tables the compiler builds from the product's tools.
// Like the tokenizer's runtime it is plain C++17 that allocates nothing and calls nothing of the
// OS; the tables are one image (CallImage below) that needlec emits beside the weights, and the
// C++ backend carries this header, joined with the contract, into the sources of models with tools.
#ifndef NEEDLE_RT_CALLS_H
#define NEEDLE_RT_CALLS_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../needle_contract.h"

namespace needle_rt {

/// What a state allows beyond its bitset: one token and the state it leads to.
struct CallEdge {
  int32_t token;
  uint32_t target;
};

/// A set of tokens that all lead to one state: bitset `bitset` of the image's bitsets.
struct CallGroup {
  uint32_t bitset, target;
};

/// A state: the tokens of groups [group_first, group_last) lead to their group's target (no token
/// is in two); edges [first, last), sorted by token and none of them in a group, where each says.
struct CallRow {
  uint32_t group_first, group_last, first, last;
};

/// The image's header; each array field is the offset of that array from the image's start.
/// State `finished` is a whole call (its end token taken, when the tools name one): nothing follows.
struct CallImage {
  uint32_t vocab_size, words, states, start, finished;
  int32_t end_token; // -1: none (a call ends at its closing brace)
  // The prompt around the query, as ids (docs/tool-calls.md, "The prompt"); prefix_key names the
  // prefix (never 0) in a session that holds it (SessionHeader::request_prefix).
  uint32_t prefix_ids, prefix_count, suffix_ids, suffix_count, prefix_key;
  // What call_decode keeps at the end of the session's arena, `scratch_bytes` in all: the query's
  // ids (at most max_query_ids) at 0, the mask at mask_offset, the encoder's scratch at
  // encode_offset (enough for a query of max_query bytes).
  uint32_t max_query, max_query_ids, scratch_bytes, mask_offset, encode_offset;
  uint32_t rows;      // CallRow [states]
  uint32_t groups;    // CallGroup [...]
  uint32_t bitsets;   // uint32_t [bitset count * words]: bit i % 32 of word i / 32 is token i
  uint32_t edges;     // CallEdge [...]
  uint32_t distances; // uint32_t [states]: the fewest tokens from a state to finished
  // Routing (NAME_call_top_k; 0 tools in a record automaton): tool i's head, the bytes its calls
  // begin with, is head_bytes[head_offsets[i] .. head_offsets[i + 1]); its unit embedding at
  // depth d is embedding_dim floats at embeddings + ((d - route_min_depth) * tools + i) *
  // embedding_dim. The routing's scratch (RouteScratch) starts at route_offset.
  uint32_t tools, embedding_dim, route_min_depth, route_depths;
  uint32_t head_offsets, head_bytes, embeddings, route_offset;
};

struct CallTables {
  const CallImage *header;
  const int32_t *prefix_ids, *suffix_ids;
  const CallRow *rows;
  const CallGroup *groups;
  const uint32_t *bitsets;
  const CallEdge *edges;
  const uint32_t *distances;
  const uint32_t *head_offsets;
  const char *head_bytes;
  const float *embeddings;
};

inline CallTables call_tables(const uint8_t *image) {
  const auto *h = reinterpret_cast<const CallImage *>(image);
  return {h,
          reinterpret_cast<const int32_t *>(image + h->prefix_ids),
          reinterpret_cast<const int32_t *>(image + h->suffix_ids),
          reinterpret_cast<const CallRow *>(image + h->rows),
          reinterpret_cast<const CallGroup *>(image + h->groups),
          reinterpret_cast<const uint32_t *>(image + h->bitsets),
          reinterpret_cast<const CallEdge *>(image + h->edges),
          reinterpret_cast<const uint32_t *>(image + h->distances),
          reinterpret_cast<const uint32_t *>(image + h->head_offsets),
          reinterpret_cast<const char *>(image + h->head_bytes),
          reinterpret_cast<const float *>(image + h->embeddings)};
}

/// A decoder's place in the automaton as the C interface holds it: the state, and a check word
/// so that memory that never came from call_begin is refused rather than read as an index.
struct CallState {
  uint32_t state, check;
};
constexpr uint32_t call_check_key = 0x9E3779B9u;

inline uint32_t call_check(uint32_t state) { return (state * 2654435761u) ^ call_check_key; }

inline void call_set(CallState *s, uint32_t state) { *s = {state, call_check(state)}; }

inline void call_begin(const CallTables &t, CallState *s) {
  if (s)
    call_set(s, t.header->start);
}

/// The state held by `s`, or -1 when `s` is NULL or was not set by call_begin / call_advance.
inline int64_t call_state_of(const CallTables &t, const CallState *s) {
  if (!s || s->state >= t.header->states || s->check != call_check(s->state))
    return -1;
  return s->state;
}

/// Whether bitset `b` holds `token`.
inline bool call_bit(const CallTables &t, uint32_t b, uint32_t token) {
  return (t.bitsets[size_t(b) * t.header->words + token / 32] >> (token % 32)) & 1u;
}

/// The state `token` leads to from `state` (< states), or -1 when the token is not allowed there.
inline int64_t call_next(const CallTables &t, uint32_t state, int32_t token) {
  if (token < 0 || uint32_t(token) >= t.header->vocab_size)
    return -1;
  const CallRow &row = t.rows[state];
  for (uint32_t g = row.group_first; g < row.group_last; ++g)
    if (call_bit(t, t.groups[g].bitset, uint32_t(token)))
      return t.groups[g].target;
  uint32_t lo = row.first, hi = row.last; // the edges are sorted by token
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (t.edges[mid].token < token)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < row.last && t.edges[lo].token == token ? int64_t(t.edges[lo].target) : -1;
}

/// Writes the tokens allowed in `s` to `bits` (words = ceil(vocab_size / 32) words, bit i % 32 of
/// word i / 32 for token i): those that keep the output a valid prefix of a call and leave a way to
/// finish it in at most `budget` tokens in all (the end token included). status_err_full when none
/// does (finished, or the call cannot finish within the budget; bits all zero), status_err_arg for a bad state
/// or NULL bits.
inline int call_mask(const CallTables &t, const CallState *s, size_t budget, uint32_t *bits) {
  const int64_t state = call_state_of(t, s);
  if (state < 0 || !bits)
    return status_err_arg;
  const CallImage &h = *t.header;
  std::memset(bits, 0, size_t(h.words) * sizeof(uint32_t));
  const auto fits = [&](uint32_t target) { return budget > 0 && t.distances[target] <= budget - 1; };
  const CallRow &row = t.rows[state];
  bool any = false;
  for (uint32_t g = row.group_first; g < row.group_last; ++g) {
    if (!fits(t.groups[g].target))
      continue;
    const uint32_t *set = t.bitsets + size_t(t.groups[g].bitset) * h.words;
    if (!any)
      std::memcpy(bits, set, size_t(h.words) * sizeof(uint32_t));
    else
      for (uint32_t w = 0; w < h.words; ++w)
        bits[w] |= set[w];
    any = true;
  }
  for (uint32_t e = row.first; e < row.last; ++e)
    if (fits(t.edges[e].target)) {
      bits[uint32_t(t.edges[e].token) / 32] |= 1u << (uint32_t(t.edges[e].token) % 32);
      any = true;
    }
  return any ? status_ok : status_err_full;
}

/// Moves `s` past `token`: status_err_token (s unchanged) when the token is not allowed there,
/// status_err_arg for a bad state.
inline int call_advance(const CallTables &t, CallState *s, int32_t token) {
  const int64_t state = call_state_of(t, s);
  if (state < 0)
    return status_err_arg;
  const int64_t next = call_next(t, uint32_t(state), token);
  if (next < 0)
    return status_err_token;
  call_set(s, uint32_t(next));
  return status_ok;
}

/// 1 when `s` has taken the end token (a whole call), 0 when not, status_err_arg for a bad state.
inline int call_finished(const CallTables &t, const CallState *s) {
  const int64_t state = call_state_of(t, s);
  return state < 0 ? status_err_arg : int(uint32_t(state) == t.header->finished);
}

/// NAME_call's status for a confidence under the threshold (not an error).
enum : int { status_no_call = 1 };

/// Feeds `ids` through a buffer of the caller's stack: a feed refuses tokens that lie in the
/// session's arena, where call_decode keeps them.
template <typename Model> int call_feed(Model &m, const int32_t *ids, size_t n) {
  int32_t chunk[64];
  for (size_t done = 0; done < n;) {
    const size_t take = n - done < 64 ? n - done : 64;
    std::memcpy(chunk, ids + done, take * sizeof(int32_t));
    if (const int status = m.feed(chunk, take); status != status_ok)
      return status;
    done += take;
  }
  return status_ok;
}

/// The probability of the allowed token `best` (the largest logit) under the softmax of the
/// allowed tokens' logits: 1 / sum of exp(logit - best's logit).
inline float call_token_probability(const uint32_t *bits, uint32_t words, const float *logits, int32_t best) {
  float sum = 0;
  for (uint32_t w = 0; w < words; ++w)
    for (uint32_t word = bits[w]; word; word &= word - 1)
      sum += std::exp(logits[w * 32 + uint32_t(__builtin_ctz(word))] - logits[best]);
  return 1.0f / sum;
}

/// The allowed token with the largest logit (the first, on a tie); -1 for none.
inline int32_t call_argmax(const uint32_t *bits, uint32_t words, const float *logits) {
  int32_t best = -1;
  for (uint32_t w = 0; w < words; ++w)
    for (uint32_t word = bits[w]; word; word &= word - 1) {
      const int32_t id = int32_t(w * 32 + uint32_t(__builtin_ctz(word)));
      if (best < 0 || logits[id] > logits[best])
        best = id;
    }
  return best;
}

/// Whether a request's arguments are usable (NAME_call's and NAME_extract's): a session, buffers
/// that are not NULL unless empty, and none of them inside the arena, which the request writes.
template <typename Model>
bool request_arguments_ok(const Model &m, const char *text, size_t length, const char *out, size_t cap,
                          const size_t *out_length) {
  return m.valid() && (text || !length) && (out || !cap) && out_length && !m.in_arena(text, length) &&
         !m.in_arena(out, cap) && !m.in_arena(out_length, sizeof *out_length);
}

/// A request refused for its arguments: a session keeps no call or record from before it.
template <typename Model> int request_refused(Model &m) {
  if (m.valid())
    m.keep_probability(0);
  return status_err_arg;
}

/// Where a request keeps its query's ids: the start of the scratch.
template <typename Model> int32_t *request_ids(const CallTables &, Model &m) {
  return reinterpret_cast<int32_t *>(m.scratch());
}

/// `text` encoded to the request's ids, special tokens taken as text: a user cannot type the
/// prompt's tokens.
template <typename Model>
int request_query(const CallTables &t, Model &m, const char *text, size_t length, size_t *count) {
  const CallImage &h = *t.header;
  if (length > h.max_query)
    return status_err_full;
  const int status = m.encode(text, length, m.scratch() + h.encode_offset, request_ids(t, m), h.max_query_ids, count);
  return status == status_err_space ? status_err_full : status;
}

/// A request's first half: the session fed the automaton's prompt with `text` as its query, and
/// keeping no call or record from before, whatever follows. The prompt's prefix is the same for
/// every request: a session that holds it, fed by an earlier request, goes back to its end
/// (m.resume_prefix, exact when the session keeps enough rollback: docs/tool-calls.md, "A prompt
/// fed once") rather than being reset and fed it again.
template <typename Model> int request_prompt(const CallTables &t, Model &m, const char *text, size_t length) {
  const CallImage &h = *t.header;
  size_t count = 0;
  int status = request_query(t, m, text, length, &count);
  // Going back to the prefix's end leaves no logits until a token is fed after it: only then.
  const bool resumed =
      status == status_ok && count + h.suffix_count > 0 && m.resume_prefix(h.prefix_key, h.prefix_count);
  if (!resumed)
    m.reset();
  if (status != status_ok)
    return status;
  if (!resumed) {
    if ((status = call_feed(m, t.prefix_ids, h.prefix_count)) != status_ok)
      return status;
    m.mark_prefix(h.prefix_key);
  }
  if ((status = call_feed(m, request_ids(t, m), count)) != status_ok)
    return status;
  return call_feed(m, t.suffix_ids, h.suffix_count);
}

/// The one token `bits` allows, or -1 when it allows several (or none).
inline int32_t call_forced(const uint32_t *bits, uint32_t words) {
  int32_t only = -1;
  for (uint32_t w = 0; w < words; ++w)
    if (const uint32_t word = bits[w]) {
      if (only >= 0 || (word & (word - 1)))
        return -1;
      only = int32_t(w * 32 + uint32_t(__builtin_ctz(word)));
    }
  return only;
}

/// A request's second half: the value (a call, a record) decoded greedily under the automaton's
/// masks, feeding each token but the last, written to out[0..cap). A token the mask forces (it
/// allows no other) needs no logits, so the tokens are fed only when a choice needs the logits
/// after them: a run of forced tokens (a call's braces, keys and quotes) goes through the model
/// as one batched feed.
/// A request's masks as the automaton gives them (a Narrowing narrows a mask before each choice,
/// and learns each token's bytes: routes.h's NameFilter keeps a call's name to the kept tools).
struct Unnarrowed {
  template <typename Model> int narrow(Model &, uint32_t *, size_t) const { return status_ok; }
  void take(const char *, size_t, size_t) {}
};

template <typename Model, typename Narrowing>
int request_generate(const CallTables &t, Model &m, char *out, size_t cap, size_t *out_length, Narrowing narrowing) {
  const CallImage &h = *t.header;
  auto *bits = reinterpret_cast<uint32_t *>(m.scratch() + h.mask_offset);
  CallState state;
  call_begin(t, &state);
  int32_t unfed[64] = {}; // chosen, not yet fed (on the stack: a feed refuses tokens in the arena)
  size_t pending = 0, written = 0;
  float probability = 1;
  int status = status_ok;
  while (!call_finished(t, &state)) {
    // Every token but the last is fed, so the value may take one token past the session's room.
    if ((status = call_mask(t, &state, m.max_seq() - m.position() - pending + 1, bits)) != status_ok ||
        (status = narrowing.narrow(m, bits, written)) != status_ok)
      return status;
    int32_t token = call_forced(bits, h.words);
    if (token < 0) {
      if (pending > 0 && (status = m.feed(unfed, pending)) != status_ok)
        return status;
      pending = 0;
      token = call_argmax(bits, h.words, m.logits());
      const float p = call_token_probability(bits, h.words, m.logits(), token);
      probability = p < probability ? p : probability;
    }
    if ((status = call_advance(t, &state, token)) != status_ok)
      return status;
    if (token != h.end_token) {
      const char *bytes = nullptr;
      size_t n = 0;
      if ((status = m.token_bytes(token, &bytes, &n)) != status_ok)
        return status;
      narrowing.take(bytes, n, written);
      if (written + n <= cap)
        std::memcpy(out + written, bytes, n);
      written += n;
    }
    if (pending == sizeof unfed / sizeof *unfed) {
      if ((status = m.feed(unfed, pending)) != status_ok)
        return status;
      pending = 0;
    }
    unfed[pending++] = token;
  }
  if (pending > 1 && (status = m.feed(unfed, pending - 1)) != status_ok)
    return status;
  *out_length = written;
  if (written > cap)
    return status_err_space;
  m.keep_probability(probability);
  return status_ok;
}

/// Whether NAME_call's arguments are usable: a request's, and a confidence outside the arena.
template <typename Model>
bool call_arguments_ok(const Model &m, const char *text, size_t length, const char *out, size_t cap,
                       const size_t *out_length, const float *confidence) {
  return request_arguments_ok(m, text, length, out, cap, out_length) && confidence &&
         !m.in_arena(confidence, sizeof *confidence);
}

/// NAME_call once its arguments are checked: the prompt with `text` as its query through the
/// session, then, when the confidence head says at least `threshold`, the call decoded greedily
/// under the automaton's masks (narrowed by `narrowing`), written to out[0..cap).
template <typename Model, typename Narrowing>
int call_request(const CallTables &t, Model &m, const char *text, size_t length, float threshold, char *out, size_t cap,
                 size_t *out_length, float *confidence, Narrowing narrowing) {
  *out_length = 0;
  if (const int status = request_prompt(t, m, text, length); status != status_ok)
    return status;
  *confidence = m.confidence();
  if (!(*confidence >= threshold))
    return status_no_call;
  return request_generate(t, m, out, cap, out_length, narrowing);
}

/// NAME_call (docs/c-interface.md). `Model` gives the session's functions: feed, logits,
/// confidence, position, max_seq, encode (text to ids, in the scratch it is given), token_bytes,
/// scratch (the call's bytes at the end of the arena), in_arena (whether a caller's buffer
/// overlaps the arena, which the call overwrites), and keep_probability (the smallest
/// probability of the call's tokens under their masks, for NAME_call_probability; the session's
/// reset sets it to 0); routes.h adds depth and embedding.
template <typename Model>
int call_decode(const CallTables &t, Model &m, const char *text, size_t length, float threshold, char *out, size_t cap,
                size_t *out_length, float *confidence) {
  if (!call_arguments_ok(m, text, length, out, cap, out_length, confidence))
    return request_refused(m);
  return call_request(t, m, text, length, threshold, out, cap, out_length, confidence, Unnarrowed{});
}

/// NAME_extract (docs/c-interface.md): NAME_call on the record automaton, without the gate.
template <typename Model>
int record_decode(const CallTables &t, Model &m, const char *text, size_t length, char *out, size_t cap,
                  size_t *out_length) {
  if (!request_arguments_ok(m, text, length, out, cap, out_length))
    return request_refused(m);
  *out_length = 0;
  if (const int status = request_prompt(t, m, text, length); status != status_ok)
    return status;
  return request_generate(t, m, out, cap, out_length, Unnarrowed{});
}

} // namespace needle_rt

#endif // NEEDLE_RT_CALLS_H
