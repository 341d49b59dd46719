// The call language's automata (compiler/Calls, runtime/calls/calls.h): which texts a schema's
// automaton accepts, against what JSON Schema says of them, and the token automaton's masks and
// moves against walking the byte automaton over each token's bytes.
#include "Calls/ByteAutomaton.h"
#include "Calls/Schema.h"
#include "Calls/TokenAutomaton.h"
#include "Support/Error.h"
#include "Support/Json.h"

#include <gtest/gtest.h>

#include <random>

namespace needle::calls {
namespace {

/// The automaton of calls of one tool named "f" whose arguments' schema is `parameters`.
ByteAutomaton callsOf(const std::string &parameters) {
  const std::string tools = R"([{"name": "f", "parameters": )" + parameters + "}]";
  return buildByteAutomaton(callLanguage(parseTools(tools, "tools.json"), "tools.json"), "tools.json");
}

bool accepts(const ByteAutomaton &dfa, std::string_view text) {
  int32_t state = 0;
  for (const char c : text)
    if ((state = dfa.step(uint32_t(state), uint8_t(c))) < 0)
      return false;
  return dfa.accepting[uint32_t(state)];
}

std::string call(const std::string &arguments) { return R"({"name":"f","arguments":)" + arguments + "}"; }

std::string errorOf(const std::string &parameters) {
  try {
    callsOf(parameters);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(CallsTest, IntegersInRangeAreExactlyThoseBetweenTheBounds) {
  const std::pair<int64_t, int64_t> ranges[] = {{-12, 345}, {0, 0}, {7, 7}, {-1000, -999}, {99, 101}, {-5, 1000}};
  for (const auto &[low, high] : ranges) {
    const ByteAutomaton dfa = callsOf(fmt::format(
        R"({{"type": "object", "properties": {{"n": {{"type": "integer", "minimum": {}, "maximum": {}}}}}, "required": ["n"]}})",
        low, high));
    for (int64_t n = -2000; n <= 2000; ++n)
      EXPECT_EQ(accepts(dfa, call(fmt::format(R"({{"n":{}}})", n))), n >= low && n <= high)
          << n << " in " << low << ".." << high;
    EXPECT_FALSE(accepts(dfa, call(R"({"n":-0})")));
    EXPECT_FALSE(accepts(dfa, call(R"({"n":007})")));
  }
}

TEST(CallsTest, ExclusiveAndOneSidedIntegerBounds) {
  const ByteAutomaton dfa = callsOf(
      R"({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": -3}}, "required": ["n"]})");
  for (int64_t n = -100; n <= 100000; n += (n < 100 ? 1 : 997))
    EXPECT_EQ(accepts(dfa, call(fmt::format(R"({{"n":{}}})", n))), n > -3) << n;
  const ByteAutomaton below = callsOf(
      R"({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMaximum": 10.5}}, "required": ["n"]})");
  for (int64_t n = -100000; n <= 100; n += (n > -100 ? 1 : 997))
    EXPECT_EQ(accepts(below, call(fmt::format(R"({{"n":{}}})", n))), n <= 10) << n;
  EXPECT_TRUE(accepts(below, call(R"({"n":-9223372036854775808})")));
}

TEST(CallsTest, IntegerBoundsAreReadWithoutRounding) {
  // 2^53 + 1 is no double: read as one, the bound would round to 2^53.
  const ByteAutomaton dfa = callsOf(
      R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 9007199254740993,
      "exclusiveMaximum": 9223372036854775807}}, "required": ["n"]})");
  EXPECT_FALSE(accepts(dfa, call(R"({"n":9007199254740992})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"n":9007199254740993})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"n":9223372036854775806})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"n":9223372036854775807})")));
  const ByteAutomaton lowest = callsOf(
      R"({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMaximum": -9223372036854775807}},
      "required": ["n"]})");
  EXPECT_TRUE(accepts(lowest, call(R"({"n":-9223372036854775808})")));
  EXPECT_FALSE(accepts(lowest, call(R"({"n":-9223372036854775807})")));
}

TEST(CallsTest, OptionalPropertiesInOrderWithCommas) {
  const ByteAutomaton dfa =
      callsOf(R"({"type": "object", "properties": {"a": {"type": "null"}, "b": {"type": "boolean"},
      "c": {"type": "null"}}, "required": ["b"]})");
  EXPECT_TRUE(accepts(dfa, call(R"({"b":true})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"a":null,"b":false})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"a":null,"b":false,"c":null})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"b":false,"c":null})")));
  EXPECT_FALSE(accepts(dfa, call(R"({})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"b":true,"a":null})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"a":null})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"b":true,})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"b": true})")));
}

TEST(CallsTest, StringLengthsCountCharactersNotBytes) {
  const ByteAutomaton dfa = callsOf(
      R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 3}}, "required": ["s"]})");
  EXPECT_FALSE(accepts(dfa, call(R"({"s":"a"})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"s":"ab"})")));
  EXPECT_TRUE(accepts(dfa, call("{\"s\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"))); // three code points
  EXPECT_TRUE(accepts(dfa, call(R"({"s":"\n\u00e9"})")));                              // an escape is one
  EXPECT_FALSE(accepts(dfa, call(R"({"s":"abcd"})")));
  EXPECT_FALSE(accepts(dfa, call("{\"s\":\"a\xc3\"}")));         // not UTF-8
  EXPECT_FALSE(accepts(dfa, call("{\"s\":\"a\xed\xa0\x80\"}"))); // a surrogate
  EXPECT_FALSE(accepts(dfa, call("{\"s\":\"a\tb\"}")));          // a raw control character
  EXPECT_TRUE(accepts(dfa, call(R"({"s":"\ud7ff\uE000"})")));
  for (const char *surrogate : {R"({"s":"\ud800"})", R"({"s":"\uDBFF"})", R"({"s":"\udc00"})", R"({"s":"\uDfFf"})"})
    EXPECT_FALSE(accepts(dfa, call(surrogate))) << surrogate;
}

TEST(CallsTest, ArraysEnumsConstAnyOfAndReferences) {
  const ByteAutomaton dfa = callsOf(R"({"type": "object", "$defs": {"d": {"enum": ["x", 1, null, [true]]}},
      "properties": {"l": {"type": "array", "items": {"$ref": "#/$defs/d"}, "minItems": 1, "maxItems": 2},
      "k": {"const": "y"}, "u": {"oneOf": [{"type": "number"}, {"type": ["string", "null"], "maxLength": 1}]}},
      "required": ["l"]})");
  EXPECT_TRUE(accepts(dfa, call(R"({"l":["x"]})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"l":[1,[true]],"k":"y"})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"l":[null],"u":-1.5e+3})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"l":[null],"u":"z"})")));
  EXPECT_TRUE(accepts(dfa, call(R"({"l":[null],"u":null})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"l":[]})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"l":["x","x","x"]})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"l":["y"]})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"l":[1],"k":"x"})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"l":[1],"u":"zz"})")));
  EXPECT_FALSE(accepts(dfa, call(R"({"l":[1],"u":01})")));
}

TEST(CallsTest, UnsupportedSchemasAreErrorsNamingThePath) {
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}})")
                .find("tools.json: [0].parameters.properties.a.pattern: the keyword is not supported"),
            std::string::npos);
  EXPECT_NE(
      errorOf(
          R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}})")
          .find("refers to itself"),
      std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["b"]})")
                .find("[0].parameters.required: \"b\" is not one of the properties"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"enum": []}}})").find(".a.enum: must be a list"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 2}}})")
                .find("no integer lies between"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {}}})").find("a value of any type"), std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"type": "string", "minimum": 1}}})")
                .find(".a.minimum: does not apply"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 100000}}})")
                .find("more than the 256"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "additionalProperties": true})").find("only false"), std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"oneOf": [{"type": "integer", "maximum": 20},
      {"type": "integer", "minimum": 10}]}}})")
                .find(".a.oneOf: branches 0 and 1 both take 10:"),
            std::string::npos);
  // Disjoint as texts, yet {"b":1,"a":1} is valid under both branches.
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"x": {"oneOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
      {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}}]}}})")
                .find(".x.oneOf[0]: oneOf of objects or arrays is not supported"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type": "object", "properties": {"a": {"type": ["number", "integer"], "maximum": 1}}})")
                .find(".a.maximum: bounds on numbers are not supported"),
            std::string::npos);
}

/// The state after `text` in the byte automaton, or -1.
int32_t walk(const ByteAutomaton &dfa, std::string_view text) {
  int32_t state = 0;
  for (const char c : text)
    if ((state = dfa.step(uint32_t(state), uint8_t(c))) < 0)
      return -1;
  return state;
}

TEST(CallsTest, TokenMasksAreWhatTheByteAutomatonAllows) {
  const ByteAutomaton dfa = callsOf(R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 4},
      "n": {"type": "integer", "minimum": 0, "maximum": 50}}, "required": ["n"]})");
  std::vector<std::optional<std::string>> tokens;
  for (int b = 0; b < 256; ++b)
    tokens.push_back(std::string(1, char(b)));
  for (const char *piece :
       {"{\"", "\":", "\"}", "\",", "name", "arguments", "12", "5", "50}", "ab", "\"n", "}}", "\xc3"})
    tokens.push_back(std::string(piece));
  tokens.push_back(std::nullopt); // a special token
  const int32_t end = int32_t(tokens.size());
  tokens.push_back(std::nullopt); // the end token: never in a text
  const CompiledCalls compiled = buildCallAutomaton(dfa, tokens, end, {}, {}, "tools.json");
  const needle_rt::CallTables tables = callTables(compiled.image);
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    needle_rt::CallState state;
    needle_rt::call_begin(tables, &state);
    std::string text;
    std::vector<uint32_t> bits((tokens.size() + 31) / 32);
    for (int step = 0; step < 64; ++step) {
      const int status = needle_rt::call_mask(tables, &state, SIZE_MAX, bits.data());
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < tokens.size(); ++id) {
        const bool bit = (bits[id / 32] >> (id % 32)) & 1;
        const int32_t after = tokens[id] ? walk(dfa, text + *tokens[id]) : -1;
        const bool finished = int32_t(id) == end && walk(dfa, text) >= 0 && dfa.accepting[uint32_t(walk(dfa, text))];
        // Allowed: its bytes keep the text a prefix of a call (every byte state here can still
        // finish: this vocabulary has every byte), or it ends a whole call.
        EXPECT_EQ(bit, after >= 0 || finished) << "token " << id << " after " << text;
        if (bit)
          allowed.push_back(int32_t(id));
      }
      ASSERT_EQ(status, needle_rt::status_ok) << "after " << text;
      const int32_t token = allowed[random() % allowed.size()];
      ASSERT_EQ(needle_rt::call_advance(tables, &state, token), needle_rt::status_ok);
      if (token == end) {
        EXPECT_EQ(needle_rt::call_finished(tables, &state), 1);
        EXPECT_EQ(needle_rt::call_mask(tables, &state, SIZE_MAX, bits.data()), needle_rt::status_err_full);
        break;
      }
      text += *tokens[size_t(token)];
    }
  }
}

/// The calls of one string argument "s", and a vocabulary of the 128 ASCII bytes.
const ByteAutomaton &stringCalls() {
  static const ByteAutomaton dfa =
      callsOf(R"({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]})");
  return dfa;
}

std::vector<std::optional<std::string>> asciiTokens() {
  std::vector<std::optional<std::string>> tokens;
  for (int b = 0; b < 128; ++b)
    tokens.push_back(std::string(1, char(b)));
  return tokens;
}

TEST(CallsTest, ABudgetLeavesOnlyTokensThatStillFinish) {
  const ByteAutomaton &dfa = stringCalls();
  const std::vector<std::optional<std::string>> tokens = asciiTokens();
  const CompiledCalls compiled = buildCallAutomaton(dfa, tokens, -1, {}, {}, "tools.json");
  const needle_rt::CallTables tables = callTables(compiled.image);
  const std::string shortest = call(R"({"s":""})");
  needle_rt::CallState state;
  needle_rt::call_begin(tables, &state);
  std::vector<uint32_t> bits(4);
  EXPECT_EQ(needle_rt::call_mask(tables, &state, shortest.size() - 1, bits.data()), needle_rt::status_err_full);
  std::string text;
  for (size_t budget = shortest.size(); needle_rt::call_finished(tables, &state) == 0; --budget) {
    ASSERT_EQ(needle_rt::call_mask(tables, &state, budget, bits.data()), needle_rt::status_ok);
    int32_t only = -1, count = 0;
    for (int32_t id = 0; id < 128; ++id)
      if ((bits[id / 32] >> (id % 32)) & 1)
        only = id, ++count;
    ASSERT_EQ(count, 1) << "after " << text;
    text += char(only);
    ASSERT_EQ(needle_rt::call_advance(tables, &state, only), needle_rt::status_ok);
  }
  EXPECT_EQ(text, shortest);
  EXPECT_EQ(compiled.shortestCall, shortest.size());
  needle_rt::CallState forged = {3, 3};
  EXPECT_EQ(needle_rt::call_mask(tables, &forged, 100, bits.data()), needle_rt::status_err_arg);
  EXPECT_EQ(needle_rt::call_advance(tables, &forged, 0), needle_rt::status_err_arg);
}

TEST(CallsTest, TheEndTokenIsNeverPartOfACallsText) {
  const ByteAutomaton &dfa = stringCalls();
  std::vector<std::optional<std::string>> tokens = asciiTokens();
  const int32_t end = int32_t(tokens.size());
  tokens.push_back("<end>"); // an added token that is not special: text as well
  const CompiledCalls compiled = buildCallAutomaton(dfa, tokens, end, {}, {}, "tools.json");
  const needle_rt::CallTables tables = callTables(compiled.image);
  needle_rt::CallState state;
  needle_rt::call_begin(tables, &state);
  std::vector<uint32_t> bits(5);
  for (const char c : call(R"({"s":"x"})")) {
    ASSERT_EQ(needle_rt::call_mask(tables, &state, SIZE_MAX, bits.data()), needle_rt::status_ok);
    EXPECT_FALSE((bits[end / 32] >> (end % 32)) & 1) << "inside the call, before " << c;
    ASSERT_EQ(needle_rt::call_advance(tables, &state, int32_t(uint8_t(c))), needle_rt::status_ok);
  }
  ASSERT_EQ(needle_rt::call_mask(tables, &state, SIZE_MAX, bits.data()), needle_rt::status_ok);
  EXPECT_TRUE((bits[end / 32] >> (end % 32)) & 1);
  ASSERT_EQ(needle_rt::call_advance(tables, &state, end), needle_rt::status_ok);
  EXPECT_EQ(needle_rt::call_finished(tables, &state), 1);
}

/// The logits after `history`: for each token, a hash of the history and its id in [0, 1), and the
/// closing quote favoured more with every token (so a string ends).
std::vector<float> logitsAfter(const std::vector<int32_t> &history, size_t vocab) {
  uint64_t hash = 1469598103934665603ull;
  for (const int32_t token : history)
    hash = (hash ^ uint32_t(token)) * 1099511628211ull;
  std::vector<float> logits(vocab);
  for (size_t id = 0; id < vocab; ++id)
    logits[id] = float(((hash ^ id) * 0x9e3779b97f4a7c15ull) >> 40) / float(1 << 24);
  logits['"'] += 0.02f * float(history.size());
  return logits;
}

/// request_generate's model: logitsAfter what it was fed, which it keeps, feed by feed.
struct HistoryModel {
  const std::vector<std::optional<std::string>> &tokens;
  std::vector<unsigned char> arena;
  std::vector<int32_t> fed;
  std::vector<size_t> feeds; // the tokens of each feed
  std::vector<float> now;
  float probability = -1;

  unsigned char *scratch() { return arena.data(); }
  size_t max_seq() const { return 1000; }
  size_t position() const { return fed.size(); }
  const float *logits() {
    now = logitsAfter(fed, tokens.size());
    return now.data();
  }
  int feed(const int32_t *ids, size_t n) {
    if (n > 0) {
      fed.insert(fed.end(), ids, ids + n);
      feeds.push_back(n);
    }
    return needle_rt::status_ok;
  }
  int token_bytes(int32_t id, const char **bytes, size_t *length) const {
    *bytes = tokens[size_t(id)]->data();
    *length = tokens[size_t(id)]->size();
    return needle_rt::status_ok;
  }
  void keep_probability(float p) { probability = p; }
};

TEST(CallsTest, ACallFeedsTheTokensTheMaskForcesAsOneFeed) {
  // The calls of one tool "f", one token per ASCII byte and an end token. The greedy call, worked
  // out here feeding each token before the next choice, must be request_generate's; but the tokens
  // the mask forces (one allowed) need no logits, so they reach the model together, fed only when
  // a choice needs the logits after them: `{"name":"f","arguments":{"s":"` in one feed.
  std::vector<std::optional<std::string>> tokens = asciiTokens();
  const int32_t end = int32_t(tokens.size());
  tokens.push_back("<end>");
  const CompiledCalls compiled = buildCallAutomaton(stringCalls(), tokens, end, {}, {}, "tools.json");
  const needle_rt::CallTables tables = callTables(compiled.image);
  std::vector<int32_t> history;
  std::string want;
  needle_rt::CallState state;
  needle_rt::call_begin(tables, &state);
  std::vector<uint32_t> bits(tables.header->words);
  while (needle_rt::call_finished(tables, &state) == 0) {
    ASSERT_EQ(needle_rt::call_mask(tables, &state, 1000 - history.size() + 1, bits.data()), needle_rt::status_ok);
    const std::vector<float> logits = logitsAfter(history, tokens.size());
    int32_t best = -1;
    for (int32_t id = 0; id <= end; ++id)
      if (((bits[size_t(id) / 32] >> (id % 32)) & 1) && (best < 0 || logits[size_t(id)] > logits[size_t(best)]))
        best = id;
    ASSERT_EQ(needle_rt::call_advance(tables, &state, best), needle_rt::status_ok);
    want += best == end ? "" : *tokens[size_t(best)];
    history.push_back(best);
  }
  HistoryModel model{tokens, std::vector<unsigned char>(tables.header->scratch_bytes), {}, {}, {}};
  std::string out(want.size(), '?');
  size_t length = 0;
  ASSERT_EQ(needle_rt::request_generate(tables, model, out.data(), out.size(), &length, needle_rt::Unnarrowed{}),
            needle_rt::status_ok);
  EXPECT_EQ(out.substr(0, length), want);
  EXPECT_EQ(model.fed, std::vector<int32_t>(history.begin(), history.end() - 1)); // all but the last
  ASSERT_FALSE(model.feeds.empty());
  EXPECT_EQ(model.feeds.front(), std::string(R"({"name":"f","arguments":{"s":")").size());
  EXPECT_EQ(model.feeds.back(), 3u); // the closing `"}}`: the end token, the last, is not fed
  EXPECT_GT(model.probability, 0.0f);
  EXPECT_LT(model.probability, 1.0f);
}

/// The automaton of the records of `schema` (--schema).
ByteAutomaton recordsOf(const std::string &schema) {
  return buildByteAutomaton(recordLanguage(json::parse(schema, "schema.json"), "schema.json"), "schema.json");
}

TEST(CallsTest, ARecordIsOneValueOfItsSchemaWhateverTheRootsType) {
  const ByteAutomaton integers = recordsOf(R"({"type": "integer", "minimum": -3, "maximum": 12})");
  for (int64_t n = -20; n <= 20; ++n)
    EXPECT_EQ(accepts(integers, std::to_string(n)), n >= -3 && n <= 12) << n;
  EXPECT_FALSE(accepts(integers, "\"1\""));
  const ByteAutomaton names = recordsOf(R"({"type": "array", "items": {"$ref": "#/$defs/name"}, "maxItems": 2,
                                           "$defs": {"name": {"enum": ["a", "b"]}}})");
  for (const char *text : {"[]", R"(["a"])", R"(["b","a"])"})
    EXPECT_TRUE(accepts(names, text)) << text;
  for (const char *text : {R"(["a","b","a"])", R"(["c"])", R"([ "a"])", R"({"name":"f","arguments":["a"]})"})
    EXPECT_FALSE(accepts(names, text)) << text;
  const ByteAutomaton object = recordsOf(R"({"type": "object", "properties": {"x": {"type": "boolean"}}})");
  EXPECT_TRUE(accepts(object, R"({"x":true})"));
  EXPECT_TRUE(accepts(object, "{}"));
}

TEST(CallsTest, ARecordsErrorsNameTheKeywordFromTheRoot) {
  try {
    recordsOf(R"({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}})");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "schema.json: $.properties.when.format: the keyword is not supported (docs/tool-calls.md "
                           "lists those that are)");
  }
  // A bare number can go on into a longer one: without an end token there is no end.
  const ByteAutomaton integers = recordsOf(R"({"type": "integer"})");
  EXPECT_THROW(buildCallAutomaton(integers, asciiTokens(), -1, {}, {}, "schema.json"), Error);
  EXPECT_NO_THROW(buildCallAutomaton(integers, asciiTokens(), 0, {}, {}, "schema.json"));
}

} // namespace
} // namespace needle::calls
