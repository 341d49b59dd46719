#include "Calls/TokenAutomaton.h"

#include "Support/Error.h"
#include "Support/ImageWriter.h"
#include "runtime/calls/routes.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

namespace needle::calls {
namespace {

using Edge = needle_rt::CallEdge;
constexpr uint32_t kFar = UINT32_MAX; // no way to finish

/// The usable tokens in byte order, with each one's common prefix with the one before: walking
/// them in this order visits the vocabulary's trie, sharing every prefix's steps.
struct SortedVocabulary {
  std::vector<int32_t> ids;
  std::vector<uint32_t> common;
};

SortedVocabulary sortVocabulary(const std::vector<std::optional<std::string>> &tokens) {
  SortedVocabulary v;
  for (size_t id = 0; id < tokens.size(); ++id)
    if (tokens[id] && !tokens[id]->empty())
      v.ids.push_back(int32_t(id));
  std::sort(v.ids.begin(), v.ids.end(), [&](int32_t a, int32_t b) { return *tokens[size_t(a)] < *tokens[size_t(b)]; });
  v.common.resize(v.ids.size(), 0);
  for (size_t i = 1; i < v.ids.size(); ++i) {
    const std::string &a = *tokens[size_t(v.ids[i - 1])], &b = *tokens[size_t(v.ids[i])];
    v.common[i] = uint32_t(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
  }
  return v;
}

/// Every token allowed in byte state `state` and the byte state it leads to, by id.
std::vector<Edge> tokenMoves(const ByteAutomaton &dfa, uint32_t state, const SortedVocabulary &v,
                             const std::vector<std::optional<std::string>> &tokens) {
  std::vector<Edge> moves;
  std::vector<int32_t> path = {int32_t(state)}; // path[j]: the state after j bytes of the current token
  size_t valid = 0;                             // path[0..valid] hold for the current prefix
  int64_t deadAt = -1;                          // the byte at which the last prefix died
  for (size_t i = 0; i < v.ids.size(); ++i) {
    const std::string &text = *tokens[size_t(v.ids[i])];
    if (deadAt >= 0 && v.common[i] > uint64_t(deadAt))
      continue; // shares the prefix that died
    deadAt = -1;
    size_t j = std::min<size_t>(valid, v.common[i]);
    path.resize(text.size() + 1);
    for (; j < text.size(); ++j) {
      const int32_t next = dfa.step(uint32_t(path[j]), uint8_t(text[j]));
      if (next < 0)
        break;
      path[j + 1] = next;
    }
    if (j < text.size()) {
      deadAt = int64_t(j);
      valid = j;
      continue;
    }
    valid = text.size();
    moves.push_back({v.ids[i], uint32_t(path[j])});
  }
  std::sort(moves.begin(), moves.end(), [](const Edge &a, const Edge &b) { return a.token < b.token; });
  return moves;
}

/// The fewest tokens from each state to `finished` (kFar: none), by a search backwards.
std::vector<uint32_t> distances(const std::vector<std::vector<Edge>> &moves, uint32_t finished) {
  std::vector<std::vector<uint32_t>> into(moves.size());
  for (uint32_t s = 0; s < moves.size(); ++s) {
    std::vector<uint32_t> targets;
    for (const Edge &e : moves[s])
      targets.push_back(e.target);
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    for (const uint32_t t : targets)
      into[t].push_back(s);
  }
  std::vector<uint32_t> distance(moves.size(), kFar);
  std::deque<uint32_t> queue = {finished};
  distance[finished] = 0;
  while (!queue.empty()) {
    const uint32_t t = queue.front();
    queue.pop_front();
    for (const uint32_t s : into[t])
      if (distance[s] == kFar) {
        distance[s] = distance[t] + 1;
        queue.push_back(s);
      }
  }
  return distance;
}

/// Each state's tokens by the state they lead to, as bitsets of `words` words.
std::vector<std::map<uint32_t, std::vector<uint32_t>>> targetSets(const std::vector<std::vector<Edge>> &moves,
                                                                  uint32_t words) {
  std::vector<std::map<uint32_t, std::vector<uint32_t>>> sets(moves.size());
  for (size_t s = 0; s < moves.size(); ++s)
    for (const Edge &e : moves[s]) {
      auto &bits = sets[s].try_emplace(e.target, words, 0u).first->second;
      bits[uint32_t(e.token) / 32] |= 1u << (uint32_t(e.token) % 32);
    }
  return sets;
}

/// A name for the prompt prefix `ids` that a session holding it keeps (FNV-1a of the ids, and of
/// their count; never 0, which names none).
uint32_t prefixKey(const std::vector<int32_t> &ids) {
  uint32_t key = 2166136261u;
  for (const int32_t id : ids)
    key = (key ^ uint32_t(id)) * 16777619u;
  key = (key ^ uint32_t(ids.size())) * 16777619u;
  return key ? key : 1;
}

/// The routing's arrays (none for no tools), and their fields of `h`.
void writeRoutes(const CallRoutes &routes, ImageWriter<needle_rt::CallImage> &out, needle_rt::CallImage &h) {
  std::vector<uint32_t> offsets = {0};
  std::string bytes;
  for (const std::string &head : routes.heads) {
    bytes += head;
    offsets.push_back(uint32_t(bytes.size()));
  }
  h.tools = uint32_t(routes.heads.size());
  h.embedding_dim = routes.embeddingDim;
  h.route_min_depth = routes.minDepth;
  h.route_depths = routes.depths;
  h.head_offsets = out.array(offsets);
  h.head_bytes = out.array(bytes);
  h.embeddings = out.array(routes.embeddings);
}

/// Lays out the states' moves: a set of tokens with one target becomes a bitset when, over every
/// state it appears in, its edges would take more bytes than the bitset; the rest are edges.
CompiledCalls layout(const std::vector<std::vector<Edge>> &moves, const std::vector<uint32_t> &distance,
                     uint32_t finished, uint32_t vocabulary, int32_t endToken, const CallPrompt &prompt,
                     const CallRoutes &routes, const std::string &source) {
  const uint32_t words = (vocabulary + 31) / 32;
  const auto sets = targetSets(moves, words);
  std::map<std::vector<uint32_t>, uint64_t> edgeBytes; // each set: what its edges would take, in all
  for (const auto &state : sets)
    for (const auto &[target, bits] : state) {
      uint64_t count = 0;
      for (const uint32_t w : bits)
        count += uint64_t(__builtin_popcount(w));
      edgeBytes[bits] += count * sizeof(Edge);
    }
  std::vector<needle_rt::CallRow> rows;
  std::vector<needle_rt::CallGroup> groups;
  std::vector<uint32_t> bitsets;
  std::map<std::vector<uint32_t>, uint32_t> bitsetIds;
  std::vector<Edge> edges;
  for (size_t s = 0; s < moves.size(); ++s) {
    needle_rt::CallRow row = {uint32_t(groups.size()), 0, 0, 0};
    for (const auto &[target, bits] : sets[s]) {
      if (edgeBytes[bits] <= uint64_t(words) * 4)
        continue;
      const auto [at, added] = bitsetIds.emplace(bits, uint32_t(bitsetIds.size()));
      if (added)
        bitsets.insert(bitsets.end(), bits.begin(), bits.end());
      groups.push_back({at->second, target});
    }
    row.group_last = uint32_t(groups.size());
    row.first = uint32_t(edges.size());
    for (const Edge &e : moves[s])
      if (std::none_of(groups.begin() + row.group_first, groups.end(),
                       [&](const needle_rt::CallGroup &g) { return g.target == e.target; }))
        edges.push_back(e);
    row.last = uint32_t(edges.size());
    rows.push_back(row);
  }
  ImageWriter<needle_rt::CallImage> out("the call automaton's tables");
  needle_rt::CallImage h{};
  h.vocab_size = vocabulary;
  h.words = words;
  h.states = uint32_t(moves.size());
  h.start = 0;
  h.finished = finished;
  h.end_token = endToken;
  h.prefix_ids = out.array(prompt.prefix);
  h.prefix_count = uint32_t(prompt.prefix.size());
  h.suffix_ids = out.array(prompt.suffix);
  h.suffix_count = uint32_t(prompt.suffix.size());
  h.prefix_key = prefixKey(prompt.prefix);
  // The scratch: the query's ids, the mask, the encoder's, the routing's, each 16-byte aligned.
  const auto aligned = [](uint64_t n) { return (n + 15) / 16 * 16; };
  const uint64_t maskOffset = aligned(uint64_t(prompt.maxQueryIds) * 4);
  const uint64_t encodeOffset = maskOffset + aligned(uint64_t(words) * 4);
  const uint64_t routeOffset = encodeOffset + aligned(prompt.encodeScratch);
  const auto tools = uint32_t(routes.heads.size());
  const uint64_t scratch = routeOffset + (tools ? needle_rt::route_scratch_bytes(tools, routes.embeddingDim) : 0);
  if (scratch > UINT32_MAX)
    fail("{}: a query of {} bytes needs {} bytes of scratch, more than 4 GiB", source, prompt.maxQuery, scratch);
  h.max_query = prompt.maxQuery;
  h.max_query_ids = prompt.maxQueryIds;
  h.scratch_bytes = uint32_t(scratch);
  h.mask_offset = uint32_t(maskOffset);
  h.encode_offset = uint32_t(encodeOffset);
  h.route_offset = uint32_t(routeOffset);
  writeRoutes(routes, out, h);
  h.rows = out.array(rows);
  h.groups = out.array(groups);
  h.bitsets = out.array(bitsets);
  h.edges = out.array(edges);
  h.distances = out.array(distance);
  CompiledCalls compiled;
  compiled.image = out.finish(h);
  compiled.scratchBytes = h.scratch_bytes;
  compiled.figures = {h.states, uint32_t(bitsetIds.size()), uint32_t(groups.size()), uint32_t(edges.size()),
                      compiled.image.size()};
  return compiled;
}

} // namespace

CompiledCalls buildCallAutomaton(const ByteAutomaton &dfa, const std::vector<std::optional<std::string>> &tokens,
                                 int32_t endToken, const CallPrompt &prompt, const CallRoutes &routes,
                                 const std::string &source) {
  if (endToken >= int64_t(tokens.size()))
    fail("{}: the end token {} is not in the vocabulary", source, endToken);
  // With an end token, state dfa.states is finished; without, the accepting state is (one: a
  // state that allows nothing more, and all such states are one after minimizing).
  uint32_t finished = dfa.states;
  for (uint32_t s = 0; s < dfa.states; ++s) {
    if (!dfa.accepting[s] || endToken >= 0)
      continue;
    if (std::any_of(dfa.next.begin() + s * dfa.classes, dfa.next.begin() + (s + 1) * dfa.classes,
                    [](int32_t t) { return t >= 0; }))
      fail("{}: a whole value can go on into a longer one (a bare number): it needs an end token (--call-end)", source);
    finished = s;
  }
  // The end token ends a call; its text (an added token's) is never part of one.
  std::vector<std::optional<std::string>> texts = tokens;
  if (endToken >= 0)
    texts[size_t(endToken)].reset();
  const SortedVocabulary sorted = sortVocabulary(texts);
  std::vector<std::vector<Edge>> moves(dfa.states + (endToken >= 0 ? 1 : 0));
  for (uint32_t s = 0; s < dfa.states; ++s) {
    moves[s] = tokenMoves(dfa, s, sorted, texts);
    if (dfa.accepting[s] && endToken >= 0) {
      const auto at = std::lower_bound(moves[s].begin(), moves[s].end(), endToken,
                                       [](const Edge &e, int32_t token) { return e.token < token; });
      moves[s].insert(at, Edge{endToken, finished});
    }
  }
  const std::vector<uint32_t> distance = distances(moves, finished);
  if (distance[0] == kFar)
    fail("{}: nothing valid can be written in the model's tokens", source);
  // Keep the states a call can pass through, in the order a search from the start meets them,
  // and only the moves that can still finish.
  std::vector<int64_t> number(moves.size(), -1);
  std::vector<uint32_t> order = {0};
  number[0] = 0;
  for (size_t i = 0; i < order.size(); ++i)
    for (const Edge &e : moves[order[i]])
      if (distance[e.target] != kFar && number[e.target] < 0) {
        number[e.target] = int64_t(order.size());
        order.push_back(e.target);
      }
  std::vector<std::vector<Edge>> kept(order.size());
  std::vector<uint32_t> keptDistance(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    keptDistance[i] = distance[order[i]];
    for (const Edge &e : moves[order[i]])
      if (distance[e.target] != kFar)
        kept[i].push_back({e.token, uint32_t(number[e.target])});
  }
  CompiledCalls compiled =
      layout(kept, keptDistance, uint32_t(number[finished]), uint32_t(tokens.size()), endToken, prompt, routes, source);
  compiled.shortestCall = keptDistance[0];
  return compiled;
}

} // namespace needle::calls
