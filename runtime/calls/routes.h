// Routing among many tools (docs/tool-calls.md, "Routing among many tools"): the tools ranked by
// the cosine similarity of their embeddings, which needlec stored in the call automaton's image,
// to the query's, which the session computes; and a call's name restricted to the best top_k by
// narrowing the automaton's masks. Plain C++17, no allocation, nothing of the OS: the scratch is
// at the end of the session's arena, as the rest of NAME_call's.
#ifndef NEEDLE_RT_CALLS_ROUTES_H
#define NEEDLE_RT_CALLS_ROUTES_H

#include "calls.h"

namespace needle_rt {

inline size_t route_aligned(size_t bytes) { return (bytes + 15) / 16 * 16; }

inline uint32_t route_words(uint32_t tools) { return (tools + 31) / 32; }

/// The bytes of the routing's scratch: the query's embedding, a score per tool, and a bitset of
/// the tools (those ranked best, then those a call's text so far can still name).
inline size_t route_scratch_bytes(uint32_t tools, uint32_t embedding_dim) {
  return route_aligned(size_t(embedding_dim) * 4) + route_aligned(size_t(tools) * 4) +
         route_aligned(size_t(route_words(tools)) * 4);
}

struct RouteScratch {
  float *query, *scores;
  uint32_t *chosen;
};

inline RouteScratch route_scratch(const CallImage &h, unsigned char *scratch) {
  unsigned char *at = scratch + h.route_offset;
  RouteScratch r;
  r.query = reinterpret_cast<float *>(at);
  at += route_aligned(size_t(h.embedding_dim) * 4);
  r.scores = reinterpret_cast<float *>(at);
  at += route_aligned(size_t(h.tools) * 4);
  r.chosen = reinterpret_cast<uint32_t *>(at);
  return r;
}

/// Resets the session, feeds the query alone and scores every tool: the dot product of its unit
/// embedding at the session's depth with the session's (the cosine similarity).
template <typename Model> int route_scores(const CallTables &t, Model &m, const char *text, size_t length) {
  const CallImage &h = *t.header;
  size_t count = 0;
  m.reset();
  int status = request_query(t, m, text, length, &count);
  if (status != status_ok || (status = call_feed(m, request_ids(t, m), count)) != status_ok)
    return status;
  const int64_t rung = m.depth() - int64_t(h.route_min_depth);
  if (rung < 0 || rung >= int64_t(h.route_depths))
    return status_err_arg;
  const RouteScratch r = route_scratch(h, m.scratch());
  m.embedding(r.query);
  const float *tool = t.embeddings + size_t(rung) * h.tools * h.embedding_dim;
  for (uint32_t i = 0; i < h.tools; ++i, tool += h.embedding_dim) {
    float dot = 0;
    for (uint32_t j = 0; j < h.embedding_dim; ++j)
      dot += r.query[j] * tool[j];
    r.scores[i] = dot;
  }
  return status_ok;
}

/// The `k` best of `tools` scores, best first (the lower index on a tie): set in the bitset
/// `chosen`, and written to order[0..k) unless it is NULL.
inline void route_best(const float *scores, uint32_t tools, size_t k, uint32_t *chosen, uint32_t *order) {
  std::memset(chosen, 0, size_t(route_words(tools)) * 4);
  for (size_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (uint32_t i = 0; i < tools; ++i)
      if (!((chosen[i / 32] >> (i % 32)) & 1u) && (best < 0 || scores[i] > scores[best]))
        best = i;
    chosen[best / 32] |= 1u << (best % 32);
    if (order)
      order[j] = uint32_t(best);
  }
}

/// NAME_call_top_k's narrowing: while the call's text holds no whole head (the bytes a tool's
/// calls begin with), a token is allowed only when the text with it stays consistent with the
/// head of a kept tool that the text so far begins with (alive: the kept tools at first, then
/// those the text has not ruled out; the filter clears their bits as it goes). No head is a prefix of another,
/// so once the text holds one, that tool is the call's and the automaton alone decides.
class NameFilter {
public:
  NameFilter(const CallTables &t, uint32_t *alive) : t_(t), alive_(alive) {}

  template <typename Model> int narrow(Model &m, uint32_t *bits, size_t at) const {
    if (settled_)
      return status_ok;
    bool any = false;
    for (uint32_t w = 0; w < t_.header->words; ++w)
      for (uint32_t word = bits[w]; word; word &= word - 1) {
        const uint32_t bit = uint32_t(__builtin_ctz(word));
        const char *bytes = nullptr;
        size_t n = 0;
        if (const int status = m.token_bytes(int32_t(w * 32 + bit), &bytes, &n); status != status_ok)
          return status;
        if (any_fits(at, bytes, n))
          any = true;
        else
          bits[w] &= ~(1u << bit);
      }
    return any ? status_ok : status_err_full;
  }

  /// The text so far, `at` bytes, goes on with bytes[0..n).
  void take(const char *bytes, size_t n, size_t at) {
    if (settled_)
      return;
    for (uint32_t i = 0; i < t_.header->tools; ++i)
      if (alive(i)) {
        if (!fits(i, at, bytes, n))
          alive_[i / 32] &= ~(1u << (i % 32));
        else if (head_length(i) <= at + n)
          settled_ = true;
      }
  }

private:
  bool alive(uint32_t tool) const { return (alive_[tool / 32] >> (tool % 32)) & 1u; }
  uint32_t head_length(uint32_t tool) const { return t_.head_offsets[tool + 1] - t_.head_offsets[tool]; }
  /// Whether tool's head, from byte `at` on, and bytes[0..n) agree as far as both go.
  bool fits(uint32_t tool, size_t at, const char *bytes, size_t n) const {
    const size_t length = head_length(tool), common = at >= length ? 0 : (n < length - at ? n : length - at);
    return common == 0 || std::memcmp(t_.head_bytes + t_.head_offsets[tool] + at, bytes, common) == 0;
  }
  bool any_fits(size_t at, const char *bytes, size_t n) const {
    for (uint32_t i = 0; i < t_.header->tools; ++i)
      if (alive(i) && fits(i, at, bytes, n))
        return true;
    return false;
  }

  const CallTables &t_;
  uint32_t *alive_;
  bool settled_ = false;
};

/// NAME_call_rank (docs/c-interface.md): the `count` tools closest to the query, best first.
template <typename Model>
int call_rank(const CallTables &t, Model &m, const char *text, size_t length, uint32_t *order, size_t count) {
  if (!m.valid() || (!text && length) || (!order && count) || count > t.header->tools || m.in_arena(text, length) ||
      m.in_arena(order, count * sizeof *order))
    return request_refused(m);
  if (const int status = route_scores(t, m, text, length); status != status_ok)
    return status;
  const RouteScratch r = route_scratch(*t.header, m.scratch());
  route_best(r.scores, t.header->tools, count, r.chosen, order);
  return status_ok;
}

/// NAME_call_top_k (docs/c-interface.md): NAME_call with the call's name one of the `top_k` tools
/// closest to the query; NAME_call itself for a top_k of 0 or of every tool.
template <typename Model>
int call_top_k_decode(const CallTables &t, Model &m, const char *text, size_t length, float threshold, uint32_t top_k,
                      char *out, size_t cap, size_t *out_length, float *confidence) {
  if (!call_arguments_ok(m, text, length, out, cap, out_length, confidence))
    return request_refused(m);
  if (top_k == 0 || top_k >= t.header->tools)
    return call_request(t, m, text, length, threshold, out, cap, out_length, confidence, Unnarrowed{});
  *out_length = 0;
  if (const int status = route_scores(t, m, text, length); status != status_ok)
    return status;
  const RouteScratch r = route_scratch(*t.header, m.scratch());
  route_best(r.scores, t.header->tools, top_k, r.chosen, nullptr);
  return call_request(t, m, text, length, threshold, out, cap, out_length, confidence, NameFilter(t, r.chosen));
}

} // namespace needle_rt

#endif // NEEDLE_RT_CALLS_ROUTES_H
