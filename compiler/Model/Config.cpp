#include "Model/Config.h"

#include "Model/Ladder.h"
#include "Model/Layout.h"
#include "Support/Error.h"
#include "Support/Json.h"
#include "Support/Limits.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace needle {

// Bounds that keep every allocation sane for hostile inputs [ours]; far above any Needle model.
constexpr int64_t kMaxDim = 1 << 16;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxSeqLen = 1 << 24;
constexpr int64_t kMaxSlots = 1 << 26;
constexpr int64_t kMaxOrder = 64;
constexpr int64_t kMaxTaps = 64;

int64_t Config::engramHeadCount() const {
  if (engramHeads > 0)
    return engramHeads;
  int64_t orders = std::max<int64_t>(1, static_cast<int64_t>(engramOrders.size()));
  return std::max<int64_t>(1, dModel / (orders * 128));
}

int64_t Config::engramTableCount() const { return static_cast<int64_t>(engramOrders.size()) * engramHeadCount(); }

int64_t Config::engramSubDim() const { return dModel / engramTableCount(); }

int64_t Config::engramDelta() const { return *std::max_element(engramOrders.begin(), engramOrders.end()); }

int64_t Config::mlpWidth() const {
  int64_t n = 1;
  while (n < dModel)
    n *= 2;
  return n;
}

int64_t Config::mlpRows() const {
  int m = 0;
  while ((int64_t{1} << m) < mlpWidth())
    ++m;
  return int64_t{1} << (m / 2);
}

int64_t Config::mlpCols() const { return mlpWidth() / mlpRows(); }

bool Config::isGlobal(int64_t block) const {
  return slidingWindow == 0 || std::find(globalLayers.begin(), globalLayers.end(), block) != globalLayers.end();
}

int64_t Config::engramSite(int64_t block) const {
  auto it = std::find(engramLayers.begin(), engramLayers.end(), block);
  return it == engramLayers.end() ? -1 : it - engramLayers.begin();
}

std::vector<int64_t> Config::order() const { return ladderOrder ? *ladderOrder : bisectionOrder(numLayers); }

std::vector<int64_t> Config::sources() const {
  if (sourceBlocks)
    return *sourceBlocks;
  std::vector<int64_t> ids(numLayers);
  for (int64_t i = 0; i < numLayers; ++i)
    ids[i] = i;
  return ids;
}

namespace {

class FieldReader {
public:
  FieldReader(std::string_view source) : source_(source) {}

  [[noreturn]] void error(std::string_view field, std::string_view problem) const {
    fail("{}: {}: {}", source_, field, problem);
  }

  void expectKind(const json::Value &v, json::Value::Kind kind, std::string_view field) const {
    if (v.kind != kind)
      error(field, fmt::format("expected {}, found {}", json::Value::kindName(kind), json::Value::kindName(v.kind)));
  }

  int64_t integer(const json::Value &v, std::string_view field) const {
    if (v.kind != json::Value::Kind::Number)
      error(field, fmt::format("expected an integer, found {}", json::Value::kindName(v.kind)));
    if (!v.isInteger)
      error(field, fmt::format("expected an integer, found {}", json::formatNumber(v.number)));
    return v.integer;
  }

  double number(const json::Value &v, std::string_view field) const {
    expectKind(v, json::Value::Kind::Number, field);
    return v.number;
  }

  std::string string(const json::Value &v, std::string_view field) const {
    expectKind(v, json::Value::Kind::String, field);
    return v.string;
  }

  std::vector<int64_t> integers(const json::Value &v, std::string_view field) const {
    expectKind(v, json::Value::Kind::Array, field);
    std::vector<int64_t> values;
    for (size_t i = 0; i < v.items.size(); ++i)
      values.push_back(integer(v.items[i], fmt::format("{}[{}]", field, i)));
    return values;
  }

private:
  std::string_view source_;
};

using Handler = std::function<void(Config &, const json::Value &, const FieldReader &)>;

template <typename T> Handler intField(T Config::*member, const char *name) {
  return [member, name](Config &c, const json::Value &v, const FieldReader &r) { c.*member = r.integer(v, name); };
}

Handler realField(double Config::*member, const char *name) {
  return [member, name](Config &c, const json::Value &v, const FieldReader &r) { c.*member = r.number(v, name); };
}

/// A list of integers, into a std::vector or a std::optional of one.
template <typename T> Handler listField(T Config::*member, const char *name) {
  return [member, name](Config &c, const json::Value &v, const FieldReader &r) { c.*member = r.integers(v, name); };
}

// Needle options outside the contract: accepted only at their default value.
Handler defaultOnly(const char *name, std::function<bool(const Config &, const json::Value &)> ok,
                    const char *expected) {
  return [=](Config &c, const json::Value &v, const FieldReader &r) {
    if (!ok(c, v))
      r.error(name, fmt::format("only {} is supported", expected));
  };
}

bool isEmptyArray(const json::Value &v) { return v.kind == json::Value::Kind::Array && v.items.empty(); }

bool isZero(const json::Value &v) { return v.kind == json::Value::Kind::Number && v.number == 0; }

bool isString(const json::Value &v, std::string_view text) {
  return v.kind == json::Value::Kind::String && v.string == text;
}

struct Field {
  const char *name;
  bool required;
  Handler handle;
};

std::vector<Field> configFields() {
  using C = Config;
  return {
      {"architecture", true,
       [](C &, const json::Value &v, const FieldReader &r) {
         if (r.string(v, "architecture") != "needle-san-ladder")
           r.error("architecture", fmt::format("\"{}\" is not \"needle-san-ladder\"", v.string));
       }},
#define NEEDLE_CONFIG_INT(key, member, init) {#key, true, intField(&C::member, #key)},
#define NEEDLE_CONFIG_REAL(key, member) {#key, true, realField(&C::member, #key)},
#define NEEDLE_CONFIG_LIST(key, member) {#key, true, listField(&C::member, #key)},
#define NEEDLE_CONFIG_OPTIONAL_LIST(key, member) {#key, false, listField(&C::member, #key)},
#include "Model/ConfigFields.def"
      {"quantization", true,
       [](C &c, const json::Value &v, const FieldReader &r) {
         r.expectKind(v, json::Value::Kind::Object, "quantization");
         std::string scheme;
         int64_t groupSize = 0;
         for (const auto &[key, value] : v.members) {
           if (key == "scheme")
             scheme = r.string(value, "quantization.scheme");
           else if (key == "group_size")
             groupSize = r.integer(value, "quantization.group_size");
           else
             r.error("quantization." + key, "unknown field");
         }
         if (!v.find("scheme"))
           r.error("quantization.scheme", "missing");
         if (!v.find("group_size"))
           r.error("quantization.group_size", "missing");
         c.quantization.text = scheme;
         c.quantization.groupSize = groupSize;
       }},
      {"attention_gate", false,
       defaultOnly(
           "attention_gate", [](const C &, const json::Value &v) { return isString(v, "elementwise"); },
           "\"elementwise\"")},
      {"hada_factor_mode", false,
       defaultOnly(
           "hada_factor_mode", [](const C &, const json::Value &v) { return isString(v, "shared"); }, "\"shared\"")},
      {"engram_bank_ids", false,
       defaultOnly(
           "engram_bank_ids", [](const C &, const json::Value &v) { return isEmptyArray(v); }, "[]")},
      {"cla_pairs", false,
       defaultOnly(
           "cla_pairs", [](const C &, const json::Value &v) { return isEmptyArray(v); }, "[]")},
      {"engram_seed_heads", false,
       defaultOnly(
           "engram_seed_heads", [](const C &, const json::Value &v) { return isZero(v); }, "0")},
      {"out_vocab", false,
       defaultOnly(
           "out_vocab", [](const C &, const json::Value &v) { return v.kind == json::Value::Kind::Number; },
           "0 or vocab_size")},
      {"kv_window", false,
       defaultOnly(
           "kv_window", [](const C &, const json::Value &v) { return isZero(v); }, "0")},
      {"ladder_widths", false,
       defaultOnly(
           "ladder_widths", [](const C &, const json::Value &v) { return isEmptyArray(v); }, "[]")},
  };
}

void checkRange(const FieldReader &r, std::string_view field, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high)
    r.error(field, fmt::format("{} is outside {}..{}", value, low, high));
}

void checkAscendingBlocks(const FieldReader &r, std::string_view field, const std::vector<int64_t> &ids,
                          int64_t numLayers) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= numLayers)
      r.error(field, fmt::format("block {} is outside 0..{}", ids[i], numLayers - 1));
    if (i > 0 && ids[i] <= ids[i - 1])
      r.error(field, "must be strictly ascending");
  }
}

/// Block ids in range, each at most once, in any order (model.md sets no order for them).
void checkDistinctBlocks(const FieldReader &r, std::string_view field, const std::vector<int64_t> &ids,
                         int64_t numLayers) {
  std::vector<bool> seen(numLayers, false);
  for (int64_t id : ids) {
    if (id < 0 || id >= numLayers)
      r.error(field, fmt::format("block {} is outside 0..{}", id, numLayers - 1));
    if (seen[id])
      r.error(field, fmt::format("block {} appears twice", id));
    seen[id] = true;
  }
}

void checkPermutation(const FieldReader &r, std::string_view field, const std::vector<int64_t> &order,
                      int64_t numLayers) {
  if (static_cast<int64_t>(order.size()) != numLayers)
    r.error(field, fmt::format("has {} entries, num_layers is {}; it must be a permutation", order.size(), numLayers));
  checkDistinctBlocks(r, field, order, numLayers);
}

} // namespace

void validateConfig(const Config &c, std::string_view source) {
  FieldReader r(source);
  checkRange(r, "vocab_size", c.vocabSize, 1, kMaxVocab);
  checkRange(r, "d_model", c.dModel, 128, kMaxDim);
  if (c.dModel % 128)
    r.error("d_model", fmt::format("{} is not a multiple of 128", c.dModel));
  checkRange(r, "num_heads", c.numHeads, 1, 1024);
  checkRange(r, "num_kv_heads", c.numKvHeads, 1, 1024);
  if (c.numHeads % c.numKvHeads)
    r.error("num_kv_heads", fmt::format("{} does not divide num_heads {}", c.numKvHeads, c.numHeads));
  checkRange(r, "qk_head_dim", c.qkHeadDim, 2, 1024);
  if (c.qkHeadDim % 2)
    r.error("qk_head_dim", fmt::format("{} is not even", c.qkHeadDim));
  checkRange(r, "v_head_dim", c.vHeadDim, 2, 1024);
  if (c.vHeadDim % 2)
    r.error("v_head_dim", fmt::format("{} is not even", c.vHeadDim));
  checkRange(r, "num_heads", c.numHeads * c.qkHeadDim, 1, kMaxDim);
  checkRange(r, "num_heads", c.numHeads * c.vHeadDim, 1, kMaxDim);
  checkRange(r, "num_layers", c.numLayers, 1, kMaxLayers);
  checkRange(r, "max_seq_len", c.maxSeqLen, 1, kMaxSeqLen);
  if (!(static_cast<float>(c.ropeTheta) > 0) || !std::isfinite(static_cast<float>(c.ropeTheta)))
    r.error("rope_theta", fmt::format("{} is not a positive float32 (it is used in float32)", c.ropeTheta));
  checkRange(r, "sliding_window", c.slidingWindow, 0, kMaxSeqLen);
  checkDistinctBlocks(r, "global_layers", c.globalLayers, c.numLayers);
  checkAscendingBlocks(r, "engram_layers", c.engramLayers, c.numLayers);
  if (c.engramOrders.empty())
    r.error("engram_orders", "must not be empty");
  for (int64_t order : c.engramOrders)
    checkRange(r, "engram_orders", order, 1, kMaxOrder);
  checkRange(r, "engram_slots", c.engramSlots, 1, kMaxSlots);
  checkRange(r, "engram_heads", c.engramHeads, 0, kMaxDim);
  if (c.dModel % c.engramTableCount())
    r.error("engram_heads", fmt::format("d_model {} is not divisible by len(engram_orders) * engram_heads = {}",
                                        c.dModel, c.engramTableCount()));
  if (c.mhcLanes != 4)
    r.error("mhc_lanes", fmt::format("{} is not supported; must be 4", c.mhcLanes));
  checkRange(r, "qkv_conv_taps", c.qkvConvTaps, 0, kMaxTaps);
  if (c.slidingWindow != 0 && c.slidingWindow < c.qkvConvTaps)
    r.error("sliding_window",
            fmt::format("{} is smaller than qkv_conv_taps {}; must be 0 or >= taps", c.slidingWindow, c.qkvConvTaps));
  checkRange(r, "embedding_dim", c.embeddingDim, 1, kMaxDim);
  checkRange(r, "embedding_probes", c.embeddingProbes, 1, 1024);
  checkRange(r, "embedding_queries", c.embeddingQueries, 1, 1024);
  checkRange(r, "confidence_probes", c.confidenceProbes, 1, 1024);
  checkRange(r, "confidence_queries", c.confidenceQueries, 1, 1024);
  checkRange(r, "pad_token_id", c.padTokenId, 0, c.vocabSize - 1);
  // Both are used as float32: a positive double that rounds to 0 or overflows there is an error.
  if (!(static_cast<float>(c.rmsEps) > 0) || !std::isfinite(static_cast<float>(c.rmsEps)))
    r.error("rms_eps", fmt::format("{} is not a positive float32 (it is used in float32)", c.rmsEps));
  if (c.ladderOrder)
    checkPermutation(r, "ladder_order", *c.ladderOrder, c.numLayers);
  if (c.sourceBlocks) {
    if (static_cast<int64_t>(c.sourceBlocks->size()) != c.numLayers)
      r.error("source_blocks", fmt::format("has {} entries, num_layers is {}", c.sourceBlocks->size(), c.numLayers));
    checkAscendingBlocks(r, "source_blocks", *c.sourceBlocks, kMaxLayers);
  }
  // Each field is within range, but together they may imply a tensor no machine should allocate.
  for (const TensorSpec &spec : modelLayout(c))
    if (elementCountWithin(spec.shape) < 0)
      fail("{}: the config makes tensor \"{}\" {}, more than the {} elements a tensor may have", source, spec.name,
           shapeString(spec.shape), kMaxTensorElements);
}

Config parseConfig(std::string_view text, std::string_view source) {
  json::Value root = json::parse(text, source);
  FieldReader r(source);
  if (root.kind != json::Value::Kind::Object)
    fail("{}: expected a JSON object at the top level", source);
  static const std::vector<Field> fields = configFields();
  Config config;
  for (const auto &[key, value] : root.members) {
    auto field = std::find_if(fields.begin(), fields.end(), [&](const Field &f) { return key == f.name; });
    if (field == fields.end())
      r.error(key, "unknown field");
    field->handle(config, value, r);
  }
  for (const Field &field : fields)
    if (field.required && !root.find(field.name))
      r.error(field.name, "missing");
  if (const json::Value *outVocab = root.find("out_vocab");
      outVocab && !(outVocab->number == 0 || outVocab->number == static_cast<double>(config.vocabSize)))
    r.error("out_vocab", "only 0 or vocab_size is supported");
  config.quantization = parseScheme(config.quantization.text, config.quantization.groupSize, source);
  validateConfig(config, source);
  return config;
}

namespace {

void appendList(std::string &out, const std::vector<int64_t> &values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", values[i]);
  out += ']';
}

} // namespace

std::string writeConfig(const Config &c) {
  std::string out = "{\n  \"architecture\": \"needle-san-ladder\"";
  auto integer = [&](const char *key, int64_t value) { out += fmt::format(",\n  \"{}\": {}", key, value); };
  auto real = [&](const char *key, double value) {
    out += fmt::format(",\n  \"{}\": {}", key, json::formatNumber(value));
  };
  auto list = [&](const char *key, const std::vector<int64_t> &values) {
    out += fmt::format(",\n  \"{}\": ", key);
    appendList(out, values);
  };
#define NEEDLE_CONFIG_INT(key, member, init) integer(#key, c.member);
#define NEEDLE_CONFIG_REAL(key, member) real(#key, c.member);
#define NEEDLE_CONFIG_LIST(key, member) list(#key, c.member);
#define NEEDLE_CONFIG_OPTIONAL_LIST(key, member)                                                                       \
  if (c.member)                                                                                                        \
    list(#key, *c.member);
#include "Model/ConfigFields.def"
  out += ",\n  \"quantization\": {\"scheme\": ";
  json::appendQuoted(out, c.quantization.text);
  out += fmt::format(", \"group_size\": {}}}\n}}\n", c.quantization.groupSize);
  return out;
}

Config presetConfig(std::string_view name) {
  Config c;
  if (name == "needle3") {
    c.vocabSize = 8192, c.dModel = 768, c.numHeads = 12, c.numKvHeads = 2, c.qkHeadDim = 48;
    c.vHeadDim = 64, c.numLayers = 20, c.maxSeqLen = 8192, c.ropeTheta = 100000;
    c.slidingWindow = 1024, c.globalLayers = {4, 9, 14, 19}, c.engramLayers = {3, 7, 11, 15, 19};
    c.engramOrders = {2, 3}, c.engramSlots = 18432, c.engramHeads = 3, c.qkvConvTaps = 3;
    c.embeddingDim = 128, c.embeddingProbes = 4, c.embeddingQueries = 4;
    c.confidenceProbes = 4, c.confidenceQueries = 4;
    c.quantization = parseScheme("embedding=4,mhc=4,default=2", 128, "needle3 preset");
  } else if (name == "tiny") {
    // Small enough for fast tests, shaped to reach every path: GQA, a sliding window shorter
    // than the test sequences, two engram orders, a non-square Kronecker MLP (8 x 16).
    c.vocabSize = 256, c.dModel = 128, c.numHeads = 4, c.numKvHeads = 2, c.qkHeadDim = 16;
    c.vHeadDim = 16, c.numLayers = 6, c.maxSeqLen = 256, c.ropeTheta = 10000;
    c.slidingWindow = 8, c.globalLayers = {2, 5}, c.engramLayers = {1, 3, 5};
    c.engramOrders = {2, 3}, c.engramSlots = 64, c.engramHeads = 1, c.qkvConvTaps = 3;
    c.embeddingDim = 16, c.embeddingProbes = 2, c.embeddingQueries = 2;
    c.confidenceProbes = 2, c.confidenceQueries = 2;
    c.quantization = parseScheme("embedding=4,mhc=4,default=2", 128, "tiny preset");
  } else {
    fail("--preset: unknown preset \"{}\" (needle3, tiny)", name);
  }
  c.mhcLanes = 4;
  c.padTokenId = 0;
  c.rmsEps = 1e-6;
  validateConfig(c, name);
  return c;
}

} // namespace needle
