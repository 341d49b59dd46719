#include "Model/Layout.h"

#include "Support/Error.h"

#include <fmt/format.h>

#include <algorithm>

namespace needle {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return text + "]";
}

std::vector<float> selectRows(const std::vector<float> &values, const std::vector<int64_t> &shape, size_t axis,
                              const std::vector<int64_t> &rows) {
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    inner *= shape[i];
  std::vector<float> out;
  out.reserve(outer * rows.size() * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t row : rows) {
      auto begin = values.begin() + (o * shape[axis] + row) * inner;
      out.insert(out.end(), begin, begin + inner);
    }
  return out;
}

TensorOwner tensorOwner(const std::string &name) {
  for (auto [prefix, kind] : {std::pair{std::string_view("blocks."), TensorOwner::Kind::Block},
                              std::pair{std::string_view("engram."), TensorOwner::Kind::Engram}}) {
    if (!name.starts_with(prefix))
      continue;
    const size_t dot = name.find('.', prefix.size());
    const std::string digits = name.substr(prefix.size(), dot == std::string::npos ? dot : dot - prefix.size());
    if (dot == std::string::npos || digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      break;
    return {kind, std::stoll(digits), name.substr(dot + 1)};
  }
  return {TensorOwner::Kind::Model, -1, name};
}

std::string sourceTensorName(const Config &config, const std::string &leaf, int64_t source) {
  const std::vector<int64_t> sources = config.sources();
  auto it = std::find(sources.begin(), sources.end(), source);
  if (it == sources.end())
    fail("weight \"{}\" of block {}: the model file has no such source block", leaf, source);
  const int64_t index = it - sources.begin();
  if (!leaf.starts_with("engram."))
    return fmt::format("blocks.{}.{}", index, leaf);
  const int64_t site = config.engramSite(index);
  if (site < 0)
    fail("weight \"{}\" of block {}: that block has no engram site in the model file", leaf, source);
  return fmt::format("engram.{}.{}", site, leaf.substr(7));
}

uint64_t checkedElementCount(const std::vector<int64_t> &shape, std::string_view where) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim != 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(dim)))
      fail("{}: shape {} is negative or too large", where, shapeString(shape));
    count *= static_cast<uint64_t>(dim);
  }
  return count;
}

size_t headRowAxis(std::string_view name) { return name.ends_with(".row_bias") ? 1 : 0; }

namespace {

void addHead(std::vector<TensorSpec> &specs, const Config &c, const std::string &head, int64_t probes, int64_t queries,
             int64_t projRows, bool withBias) {
  using R = TensorSpec::Role;
  const int64_t rows = c.headRows(), D = c.dModel;
  specs.push_back({head + ".probes", {rows, probes, D}, R::Float, "", false});
  specs.push_back({head + ".gain", {rows, probes}, R::Float, "", false});
  specs.push_back({head + ".query", {queries, D}, R::Float, "", false});
  specs.push_back({head + ".row_bias", {queries, rows, probes}, R::Float, "", false});
  specs.push_back({head + ".proj", {projRows, queries * D}, R::Float, "", false});
  if (withBias)
    specs.push_back({head + ".bias", {1}, R::Float, "", false});
}

} // namespace

std::vector<TensorSpec> modelLayout(const Config &c) {
  using R = TensorSpec::Role;
  const int64_t D = c.dModel, n = c.mlpWidth(), ba = c.mlpRows(), bb = c.mlpCols();
  const int64_t q = c.numHeads * c.qkHeadDim, k = c.numKvHeads * c.qkHeadDim, v = c.numKvHeads * c.vHeadDim;
  const int64_t o = c.numHeads * c.vHeadDim;
  std::vector<TensorSpec> specs;
  specs.push_back({"embed.weight", {c.vocabSize, D}, R::Quantizable, "embedding", false});
  for (int64_t j = 0; j < c.numLayers; ++j) {
    const std::string b = fmt::format("blocks.{}.", j);
    auto add = [&](const char *leaf, std::vector<int64_t> shape, R role = R::Float, const char *kind = "") {
      specs.push_back({b + leaf, std::move(shape), role, kind, false});
    };
    add("attn_norm", {D});
    add("post_attn_norm", {D});
    add("mlp_norm", {D});
    add("attn.q", {q, D}, R::Quantizable, "attn");
    add("attn.k", {k, D}, R::Quantizable, "attn");
    add("attn.v", {v, D}, R::Quantizable, "attn");
    add("attn.gate", {o, D}, R::Quantizable, "attn");
    add("attn.o", {D, o}, R::Quantizable, "attn");
    if (c.qkvConvTaps > 0) {
      add("attn.q_taps", {c.qkvConvTaps, q});
      add("attn.k_taps", {c.qkvConvTaps, k});
      add("attn.v_taps", {c.qkvConvTaps, v});
    }
    add("attn.q_norm", {c.qkHeadDim});
    add("attn.k_norm", {c.qkHeadDim});
    add("attn_gate", {1});
    for (const char *leaf : {"mlp.w1a", "mlp.w2a", "mlp.w3a"})
      add(leaf, {ba, ba});
    for (const char *leaf : {"mlp.w1b", "mlp.w2b", "mlp.w3b"})
      add(leaf, {bb, bb});
    for (const char *leaf : {"mlp.d1", "mlp.d2", "mlp.b2", "mlp.d3", "mlp.d4"})
      add(leaf, {n});
    add("mlp.cond_v", {D, 8});
    add("mlp.cond_u", {8, n});
    add("mhc.phi_pre", {4, 4 * D}, R::Quantizable, "mhc");
    add("mhc.phi_post", {4, 4 * D}, R::Quantizable, "mhc");
    add("mhc.phi_res", {16, 4 * D}, R::Quantizable, "mhc");
    add("mhc.a", {3});
    add("mhc.b_pre", {4});
    add("mhc.b_post", {4});
    add("mhc.b_res", {4, 4});
  }
  specs.push_back({"mlp.p1", {n}, R::Permutation, "", true});
  specs.push_back({"mlp.p2", {n}, R::Permutation, "", true});
  for (size_t s = 0; s < c.engramLayers.size(); ++s) {
    const std::string e = fmt::format("engram.{}.", s);
    specs.push_back(
        {e + "tables", {c.engramTableCount(), c.engramSlots, c.engramSubDim()}, R::Quantizable, "engram", false});
    specs.push_back({e + "key", {D, D}, R::Quantizable, "engram", false});
    specs.push_back({e + "value", {D, D}, R::Quantizable, "engram", false});
    specs.push_back({e + "taps", {4, D}, R::Float, "", false});
  }
  specs.push_back({"final_norm", {D}, R::Float, "", false});
  addHead(specs, c, "confidence", c.confidenceProbes, c.confidenceQueries, 1, true);
  addHead(specs, c, "embedding_head", c.embeddingProbes, c.embeddingQueries, c.embeddingDim, false);
  return specs;
}

} // namespace needle
