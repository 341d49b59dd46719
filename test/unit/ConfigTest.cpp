#include "Model/Config.h"
#include "Support/Error.h"
#include "Support/Json.h"

#include <gtest/gtest.h>

using namespace needle;

namespace {

/// The needle3 config with one field replaced (value as JSON text) or removed (value empty).
std::string withField(const std::string &field, const std::string &value) {
  json::Value v = json::parse(writeConfig(presetConfig("needle3")), "preset");
  auto it = std::find_if(v.members.begin(), v.members.end(), [&](auto &m) { return m.first == field; });
  if (value.empty()) {
    v.members.erase(it);
  } else if (it == v.members.end()) {
    v.members.emplace_back(field, json::parse(value, "value"));
  } else {
    it->second = json::parse(value, "value");
  }
  return json::serialize(v);
}

std::string errorOf(const std::string &text) {
  try {
    parseConfig(text, "model/config.json");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Config, Needle3PresetRoundTrips) {
  const Config c = parseConfig(writeConfig(presetConfig("needle3")), "x");
  EXPECT_EQ(c.dModel, 768);
  EXPECT_EQ(c.engramSubDim(), 128);
  EXPECT_EQ(c.mlpWidth(), 1024);
  EXPECT_EQ(c.mlpRows(), 32);
  EXPECT_EQ(c.mlpCols(), 32);
  EXPECT_EQ(writeConfig(c), writeConfig(presetConfig("needle3")));
}

TEST(Config, DerivedQuantities) {
  Config c = presetConfig("tiny");
  EXPECT_EQ(c.mlpRows(), 8);
  EXPECT_EQ(c.mlpCols(), 16);
  c.dModel = 384; // n = 512: ba = 16, bb = 32 (model.md)
  EXPECT_EQ(c.mlpWidth(), 512);
  EXPECT_EQ(c.mlpRows(), 16);
  EXPECT_EQ(c.mlpCols(), 32);
  c.engramHeads = 0; // derived: max(1, 384 / (2 * 128)) = 1
  EXPECT_EQ(c.engramHeadCount(), 1);
  c.dModel = 1024;
  EXPECT_EQ(c.engramHeadCount(), 4);
}

struct Rule {
  std::string field, value, message;
  friend void PrintTo(const Rule &rule, std::ostream *os) { *os << rule.field << "=" << rule.value; }
};

class ConfigRule : public ::testing::TestWithParam<Rule> {};

TEST_P(ConfigRule, IsRejectedNamingTheField) {
  const Rule &rule = GetParam();
  const std::string error = errorOf(withField(rule.field, rule.value));
  EXPECT_NE(error.find("model/config.json: " + rule.message), std::string::npos)
      << "field " << rule.field << "=" << rule.value << " gave: " << error;
}

INSTANTIATE_TEST_SUITE_P(
    EveryRule, ConfigRule,
    ::testing::Values(
        Rule{"architecture", "\"llama\"", "architecture: \"llama\" is not"},
        Rule{"architecture", "", "architecture: missing"}, Rule{"vocab_size", "0", "vocab_size: 0 is outside"},
        Rule{"vocab_size", "8192.5", "vocab_size: expected an integer"},
        Rule{"vocab_size", "\"8192\"", "vocab_size: expected an integer, found a string"},
        Rule{"d_model", "700", "d_model: 700 is not a multiple of 128"}, Rule{"d_model", "", "d_model: missing"},
        Rule{"num_kv_heads", "5", "num_kv_heads: 5 does not divide num_heads 12"},
        Rule{"num_heads", "0", "num_heads: 0 is outside"}, Rule{"qk_head_dim", "47", "qk_head_dim: 47 is not even"},
        Rule{"v_head_dim", "63", "v_head_dim: 63 is not even"}, Rule{"num_layers", "0", "num_layers: 0 is outside"},
        Rule{"max_seq_len", "0", "max_seq_len: 0 is outside"},
        Rule{"rope_theta", "0", "rope_theta: 0 is not a positive float32"},
        Rule{"sliding_window", "-1", "sliding_window: -1 is outside"},
        Rule{"sliding_window", "2", "sliding_window: 2 is smaller than qkv_conv_taps 3"},
        Rule{"global_layers", "[4, 20]", "global_layers: block 20 is outside 0..19"},
        Rule{"global_layers", "[9, 4, 9]", "global_layers: block 9 appears twice"},
        Rule{"global_layers", "\"4\"", "global_layers: expected an array"},
        Rule{"engram_layers", "[3, 3]", "engram_layers: must be strictly ascending"},
        Rule{"engram_orders", "[]", "engram_orders: must not be empty"},
        Rule{"engram_orders", "[0, 2]", "engram_orders: 0 is outside"},
        Rule{"engram_slots", "0", "engram_slots: 0 is outside"},
        Rule{"engram_heads", "5", "engram_heads: d_model 768 is not divisible"},
        Rule{"mhc_lanes", "2", "mhc_lanes: 2 is not supported; must be 4"},
        Rule{"qkv_conv_taps", "-1", "qkv_conv_taps: -1 is outside"},
        Rule{"embedding_dim", "0", "embedding_dim: 0 is outside"},
        Rule{"embedding_probes", "0", "embedding_probes: 0 is outside"},
        Rule{"embedding_queries", "0", "embedding_queries: 0 is outside"},
        Rule{"confidence_probes", "0", "confidence_probes: 0 is outside"},
        Rule{"confidence_queries", "0", "confidence_queries: 0 is outside"},
        Rule{"pad_token_id", "8192", "pad_token_id: 8192 is outside 0..8191"},
        Rule{"rms_eps", "0", "rms_eps: 0 is not a positive float32"},
        Rule{"rms_eps", "1e-50", "rms_eps: 1e-50 is not a positive float32 (it is used in float32)"},
        Rule{"rope_theta", "1e39", "rope_theta: 1e+39 is not a positive float32"},
        Rule{"ladder_order", "[0, 1]", "ladder_order: has 2 entries, num_layers is 20"},
        Rule{"ladder_order", "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,18]",
             "ladder_order: block 18 appears twice"},
        Rule{"source_blocks", "[1, 2]", "source_blocks: has 2 entries"},
        Rule{"quantization", "{\"scheme\": \"default=1\", \"group_size\": 128}", "quantization.scheme:"},
        Rule{"quantization", "{\"scheme\": \"default=2\", \"group_size\": 64}", "quantization.group_size: 64"},
        Rule{"quantization", "{\"scheme\": \"default=2\"}", "quantization.group_size: missing"},
        Rule{"quantization", "{\"scheme\": \"default=2\", \"group_size\": 128, \"x\": 1}",
             "quantization.x: unknown field"},
        Rule{"attention_gate", "\"headwise\"", "attention_gate: only \"elementwise\""},
        Rule{"hada_factor_mode", "\"split\"", "hada_factor_mode: only \"shared\""},
        Rule{"engram_bank_ids", "[1]", "engram_bank_ids: only []"}, Rule{"cla_pairs", "[[0, 1]]", "cla_pairs: only []"},
        Rule{"engram_seed_heads", "2", "engram_seed_heads: only 0"},
        Rule{"out_vocab", "100", "out_vocab: only 0 or vocab_size"}, Rule{"kv_window", "64", "kv_window: only 0"},
        Rule{"ladder_widths", "[1]", "ladder_widths: only []"},
        Rule{"total_parameters", "121021910", "total_parameters: unknown field"}),
    [](const ::testing::TestParamInfo<Rule> &info) { return info.param.field + "_" + std::to_string(info.index); });

TEST(Config, AcceptsNeedleOptionsAtTheirDefaults) {
  std::string text = withField("attention_gate", "\"elementwise\"");
  json::Value v = json::parse(text, "x");
  v.members.emplace_back("out_vocab", json::parse("8192", "x"));
  v.members.emplace_back("kv_window", json::parse("0", "x"));
  v.members.emplace_back("cla_pairs", json::parse("[]", "x"));
  EXPECT_NO_THROW(parseConfig(json::serialize(v), "x"));
}

TEST(Config, GlobalLayersMayComeInAnyOrder) {
  const Config c = parseConfig(withField("global_layers", "[19, 4]"), "x");
  EXPECT_TRUE(c.isGlobal(4));
  EXPECT_TRUE(c.isGlobal(19));
  EXPECT_FALSE(c.isGlobal(9));
}

TEST(Config, RejectsNonObjects) {
  EXPECT_NE(errorOf("[1]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(errorOf("{").find("model/config.json: line 1"), std::string::npos);
}

} // namespace
