// NAME_call's requests (runtime/calls) on a session the test fakes: routing among many tools
// (routes.h: the tools ranked by their embeddings' similarity to the query's, and a call's name
// kept to the best top_k), and the prompt's prefix fed once while the session keeps it
// (request_prompt). The model's embedding is the test's and its logits never change; the
// automaton is compiled from a tools file whose names share a prefix ("search", "search_web"),
// over a vocabulary with tokens that span a head's end.
#include "Calls/ByteAutomaton.h"
#include "Calls/Schema.h"
#include "Calls/TokenAutomaton.h"
#include "runtime/calls/routes.h"

#include <gtest/gtest.h>

#include <cmath>

namespace needle::calls {
namespace {

constexpr const char *kTools = R"([{"name": "search"}, {"name": "search_web"}, {"name": "alarm"}])";
constexpr uint32_t kDim = 3, kDepth = 4;

/// A session: byte-per-id encoding, a confidence of 1, the embedding `query` once fed, and logits
/// that favour the closing quote and the longest tokens, whatever was fed. It keeps the ids fed;
/// with `resumes`, it can go back to a prompt prefix it holds, as a session with rollback can.
struct RoutedModel {
  const std::vector<std::optional<std::string>> &tokens;
  std::vector<unsigned char> arena;
  std::vector<float> query;
  std::vector<float> fixed;
  bool resumes = false;
  bool stale = false; // gone back to a prefix, nothing fed since: a session's logits are zero then
  std::vector<int32_t> ids;
  uint32_t prefix = 0; // the prefix the session holds, as SessionHeader::request_prefix

  bool valid() const { return true; }
  bool in_arena(const void *, size_t) const { return false; }
  void reset() {
    ids.clear();
    prefix = 0;
  }
  bool resume_prefix(uint32_t key, size_t count) {
    if (!resumes || prefix != key || ids.size() < count)
      return false;
    ids.resize(count);
    stale = true;
    return true;
  }
  void mark_prefix(uint32_t key) { prefix = key; }
  int encode(const char *text, size_t length, void *, int32_t *ids, size_t cap, size_t *count) const {
    *count = length;
    if (length > cap)
      return needle_rt::status_err_space;
    for (size_t i = 0; i < length; ++i)
      ids[i] = int32_t(uint8_t(text[i]) & 0x7f);
    return needle_rt::status_ok;
  }
  int feed(const int32_t *fed, size_t n) {
    ids.insert(ids.end(), fed, fed + n);
    stale = stale && n == 0;
    return needle_rt::status_ok;
  }
  float confidence() const { return 1.0f; }
  int64_t depth() const { return kDepth; }
  void embedding(float *out) const {
    for (uint32_t i = 0; i < kDim; ++i)
      out[i] = ids.empty() ? 0.0f : query[i];
  }
  unsigned char *scratch() { return arena.data(); }
  size_t max_seq() const { return 1000; }
  size_t position() const { return ids.size(); }
  const float *logits() const {
    EXPECT_FALSE(stale) << "logits read after going back to the prefix, before any feed";
    return fixed.data();
  }
  int token_bytes(int32_t id, const char **bytes, size_t *length) const {
    *bytes = tokens[size_t(id)]->data();
    *length = tokens[size_t(id)]->size();
    return needle_rt::status_ok;
  }
  void keep_probability(float) {}
};

struct Routed {
  std::vector<std::optional<std::string>> tokens;
  CompiledCalls compiled;
};

Routed compileRouted(std::vector<int32_t> suffix = {'\n'}) {
  Routed r;
  for (int b = 0; b < 128; ++b)
    r.tokens.push_back(std::string(1, char(b)));
  for (const char *piece : {"search", "_web", R"({"name":"se)", R"(arch",")", R"(web",")"})
    r.tokens.push_back(std::string(piece));
  r.tokens.push_back("<end>");
  const std::vector<Tool> tools = parseTools(kTools, "tools.json");
  CallRoutes routes;
  for (const Tool &tool : tools)
    routes.heads.push_back(callHead(tool));
  routes.embeddingDim = kDim;
  routes.minDepth = kDepth;
  routes.depths = 1;
  routes.embeddings = {1, 0, 0, 0, 1, 0, 0, 0, 1}; // tool i: the unit vector e_i
  CallPrompt prompt;
  prompt.prefix = {'T', ':'};
  prompt.suffix = std::move(suffix);
  prompt.maxQuery = prompt.maxQueryIds = 64;
  const ByteAutomaton dfa = buildByteAutomaton(callLanguage(tools, "tools.json"), "tools.json");
  r.compiled = buildCallAutomaton(dfa, r.tokens, int32_t(r.tokens.size() - 1), prompt, routes, "tools.json");
  return r;
}

RoutedModel modelFor(const Routed &r, std::vector<float> query, bool resumes = false) {
  std::vector<float> logits(r.tokens.size());
  for (size_t id = 0; id < logits.size(); ++id)
    logits[id] = float(r.tokens[id]->size()) + (*r.tokens[id] == "\"" ? 10.0f : 0.0f);
  return {r.tokens, std::vector<unsigned char>(callTables(r.compiled.image).header->scratch_bytes), std::move(query),
          std::move(logits), resumes};
}

/// The query whose ranking is first, then first + 1, then first + 2 (mod 3).
std::vector<float> queryRanking(uint32_t first) {
  std::vector<float> q(kDim, 0.0f);
  q[first] = 0.8f;
  q[(first + 1) % kDim] = 0.6f;
  return q;
}

std::string callTopK(const Routed &r, RoutedModel &m, uint32_t k, const std::string &query = "q") {
  std::string out(200, '?');
  size_t length = 0;
  float confidence = 0;
  const needle_rt::CallTables t = callTables(r.compiled.image);
  EXPECT_EQ(needle_rt::call_top_k_decode(t, m, query.data(), query.size(), 0.5f, k, out.data(), out.size(), &length,
                                         &confidence),
            needle_rt::status_ok);
  return out.substr(0, length);
}

std::string callOf(const char *name) { return std::string(R"({"name":")") + name + R"(","arguments":{}})"; }

TEST(RequestsTest, ToolsRankByTheirEmbeddingsSimilarityToTheQuerys) {
  const Routed r = compileRouted();
  const needle_rt::CallTables t = callTables(r.compiled.image);
  ASSERT_EQ(t.header->tools, 3u);
  for (uint32_t first = 0; first < 3; ++first) {
    RoutedModel m = modelFor(r, queryRanking(first));
    uint32_t order[3] = {9, 9, 9};
    ASSERT_EQ(needle_rt::call_rank(t, m, "query", 5, order, 3), needle_rt::status_ok);
    EXPECT_EQ(order[0], first);
    EXPECT_EQ(order[1], (first + 1) % 3);
    EXPECT_EQ(order[2], (first + 2) % 3);
    EXPECT_EQ(m.ids.size(), 5u); // the query alone
  }
  RoutedModel m = modelFor(r, queryRanking(2));
  uint32_t order[4] = {9, 9, 9, 9};
  EXPECT_EQ(needle_rt::call_rank(t, m, "query", 5, order, 4), needle_rt::status_err_arg); // past the tools
  EXPECT_EQ(needle_rt::call_rank(t, m, nullptr, 0, order, 3), needle_rt::status_ok);      // zeros: a tie
  EXPECT_EQ(std::vector<uint32_t>(order, order + 3), (std::vector<uint32_t>{0, 1, 2}));
}

TEST(RequestsTest, ACallNamesOnlyOneOfTheTopKTools) {
  const Routed r = compileRouted();
  const char *names[] = {"search", "search_web", "alarm"};
  for (uint32_t first = 0; first < 3; ++first) {
    RoutedModel m = modelFor(r, queryRanking(first));
    EXPECT_EQ(callTopK(r, m, 1), callOf(names[first])) << first;
    const std::string two = callTopK(r, m, 2);
    EXPECT_TRUE(two == callOf(names[first]) || two == callOf(names[(first + 1) % 3])) << two;
  }
  // Unrestricted, the logits choose "search" (the closing quote after it), whatever the ranking;
  // a top_k of every tool or of 0 is the unrestricted call.
  RoutedModel m = modelFor(r, queryRanking(1));
  EXPECT_EQ(callTopK(r, m, 0), callOf("search"));
  EXPECT_EQ(callTopK(r, m, 3), callOf("search"));
  EXPECT_EQ(callTopK(r, m, 2), callOf("search_web")); // ranked search_web, alarm
}

TEST(RequestsTest, APromptsPrefixIsFedOnceWhileTheSessionKeepsIt) {
  // Two requests on a session that can go back to the prefix: the second feeds only its query and
  // the suffix after the prefix, and holds what a fresh session would. Without rollback (or after
  // a routing's feed of the query alone, which resets), the prefix is fed again.
  const Routed r = compileRouted();
  const std::vector<int32_t> prefix = {'T', ':'};
  RoutedModel fresh = modelFor(r, queryRanking(0));
  const std::string expected = callTopK(r, fresh, 0, "ab");
  RoutedModel m = modelFor(r, queryRanking(0), true);
  EXPECT_EQ(callTopK(r, m, 0, "xyz"), callOf("search"));
  EXPECT_EQ(std::vector<int32_t>(m.ids.begin(), m.ids.begin() + 6),
            (std::vector<int32_t>{'T', ':', 'x', 'y', 'z', '\n'}));
  const uint32_t held = m.prefix;
  EXPECT_NE(held, 0u);
  EXPECT_EQ(callTopK(r, m, 0, "ab"), expected);
  EXPECT_EQ(m.ids, fresh.ids); // the prefix kept, the rest fed anew
  EXPECT_EQ(m.prefix, held);
  EXPECT_EQ(callTopK(r, m, 1, "ab"), callOf("search")); // ranked: the query alone first
  EXPECT_EQ(std::vector<int32_t>(m.ids.begin(), m.ids.begin() + 2), prefix);
}

TEST(RequestsTest, AnEmptyQueryAfterTheLastPrefixTokenIsFedAnew) {
  // With no suffix, an empty query feeds nothing after the prefix: going back to its end would
  // leave the logits of no token (a session zeroes them), so the prefix is fed again.
  const Routed r = compileRouted({});
  RoutedModel fresh = modelFor(r, queryRanking(0));
  const std::string expected = callTopK(r, fresh, 0, "");
  RoutedModel m = modelFor(r, queryRanking(0), true);
  callTopK(r, m, 0, "xyz");
  EXPECT_EQ(callTopK(r, m, 0, ""), expected);
  EXPECT_EQ(m.ids, fresh.ids);
}

} // namespace
} // namespace needle::calls
