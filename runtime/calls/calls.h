// The tool-call automaton's runtime (docs/tool-calls.md): which tokens keep a call valid, and
// where each leads, read from read-only tables the compiler builds from the product's tools.
// Like the tokenizer's runtime it is plain C++17 that allocates nothing and calls nothing of the
// OS; the tables are one image (CallImage below) that needlec emits beside the weights, and the
// C++ backend carries this header, joined with the contract, into the sources of models with tools.
#ifndef NEEDLE_RT_CALLS_H
#define NEEDLE_RT_CALLS_H

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
  uint32_t rows;      // CallRow [states]
  uint32_t groups;    // CallGroup [...]
  uint32_t bitsets;   // uint32_t [bitset count * words]: bit i % 32 of word i / 32 is token i
  uint32_t edges;     // CallEdge [...]
  uint32_t distances; // uint32_t [states]: the fewest tokens from a state to finished
};

struct CallTables {
  const CallImage *header;
  const CallRow *rows;
  const CallGroup *groups;
  const uint32_t *bitsets;
  const CallEdge *edges;
  const uint32_t *distances;
};

inline CallTables call_tables(const uint8_t *image) {
  const auto *h = reinterpret_cast<const CallImage *>(image);
  return {h, reinterpret_cast<const CallRow *>(image + h->rows), reinterpret_cast<const CallGroup *>(image + h->groups),
          reinterpret_cast<const uint32_t *>(image + h->bitsets),
          reinterpret_cast<const CallEdge *>(image + h->edges),
          reinterpret_cast<const uint32_t *>(image + h->distances)};
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

} // namespace needle_rt

#endif // NEEDLE_RT_CALLS_H
