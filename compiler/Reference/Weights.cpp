#include "Reference/Weights.h"

#include "Model/Ladder.h"
#include "Model/Layout.h"
#include "Model/Permutation.h"
#include "Quant/Cq.h"
#include "Support/Error.h"

#include <fmt/format.h>

namespace needle::reference {

EngramTables::EngramTables(const Model &model, const std::string &name) : tensor_(model.tensor(name)) {
  if (tensor_.storage == Tensor::Storage::CQ)
    codebook_ = model.codebooks.at(tensor_.bits);
  else if (!tensor_.isFloat())
    fail("tensor \"{}\" is not a float tensor", name);
}

Vec EngramTables::row(int64_t index) const {
  const int64_t cols = tensor_.cols();
  if (tensor_.isFloat())
    return Vec(tensor_.floats.begin() + index * cols, tensor_.floats.begin() + (index + 1) * cols);
  Vec out(static_cast<size_t>(cols));
  cq::dequantizeRows(tensor_.packed.data(), tensor_.norms.data(), index, index + 1, cols, tensor_.bits, codebook_,
                     out.data());
  return out;
}

namespace {

HeadWeights loadHead(const Model &m, const std::string &name, int64_t probes, int64_t queries, int64_t outDim,
                     const std::vector<int64_t> &rows) {
  HeadWeights h;
  h.rows = static_cast<int64_t>(rows.size());
  h.probes = probes, h.queries = queries, h.outDim = outDim;
  h.dModel = m.config.dModel;
  h.eps = static_cast<float>(m.config.rmsEps);
  h.pad = static_cast<int32_t>(m.config.padTokenId);
  h.probeVectors = selectRows(m.floats(name + ".probes"), m.tensor(name + ".probes").shape, 0, rows);
  h.gain = selectRows(m.floats(name + ".gain"), m.tensor(name + ".gain").shape, 0, rows);
  h.query = m.floats(name + ".query");
  h.rowBias = selectRows(m.floats(name + ".row_bias"), m.tensor(name + ".row_bias").shape, 1, rows);
  h.proj = m.floats(name + ".proj");
  if (m.tensors.count(name + ".bias"))
    h.bias = m.floats(name + ".bias");
  return h;
}

BlockWeights loadBlock(const Model &m, int64_t id) {
  const Config &c = m.config;
  auto get = [&](const char *leaf) { return m.floats(fmt::format("blocks.{}.{}", id, leaf)); };
  BlockWeights b;
  b.window = c.isGlobal(id) ? 0 : c.slidingWindow;
  b.attnNorm = get("attn_norm"), b.postAttnNorm = get("post_attn_norm");
  b.q = get("attn.q"), b.k = get("attn.k"), b.v = get("attn.v"), b.gate = get("attn.gate"), b.o = get("attn.o");
  if (c.qkvConvTaps > 0)
    b.qTaps = get("attn.q_taps"), b.kTaps = get("attn.k_taps"), b.vTaps = get("attn.v_taps");
  b.qNorm = get("attn.q_norm"), b.kNorm = get("attn.k_norm");
  b.attnGate = get("attn_gate")[0];
  MlpWeights &mlp = b.mlp;
  mlp.rows = c.mlpRows(), mlp.cols = c.mlpCols();
  mlp.norm = get("mlp_norm");
  mlp.w1a = get("mlp.w1a"), mlp.w2a = get("mlp.w2a"), mlp.w3a = get("mlp.w3a");
  mlp.w1b = get("mlp.w1b"), mlp.w2b = get("mlp.w2b"), mlp.w3b = get("mlp.w3b");
  mlp.d1 = get("mlp.d1"), mlp.d2 = get("mlp.d2"), mlp.b2 = get("mlp.b2"), mlp.d3 = get("mlp.d3");
  mlp.d4 = get("mlp.d4");
  mlp.condV = get("mlp.cond_v"), mlp.condU = get("mlp.cond_u");
  mlp.p1 = mlpPermutation(m, 1), mlp.p2 = mlpPermutation(m, 2);
  b.phiPre = get("mhc.phi_pre"), b.phiPost = get("mhc.phi_post"), b.phiRes = get("mhc.phi_res");
  b.a = get("mhc.a"), b.bPre = get("mhc.b_pre"), b.bPost = get("mhc.b_post"), b.bRes = get("mhc.b_res");
  return b;
}

} // namespace

Weights::Weights(const Model &model, int64_t depth) : config(model.config) {
  eps = static_cast<float>(config.rmsEps);
  const std::vector<int64_t> kept = keptBlocks(config.order(), depth);
  std::vector<int64_t> headRows = {0};
  for (int64_t id : kept) {
    BlockWeights block = loadBlock(model, id);
    if (int64_t site = config.engramSite(id); site >= 0) {
      const std::string prefix = fmt::format("engram.{}.", site);
      sites.push_back({EngramTables(model, prefix + "tables"), model.floats(prefix + "key"),
                       model.floats(prefix + "value"), model.floats(prefix + "taps")});
      block.site = static_cast<int64_t>(sites.size()) - 1;
    }
    blocks.push_back(std::move(block));
    headRows.push_back(id + 1);
  }
  embed = model.floats("embed.weight");
  finalNorm = model.floats("final_norm");
  confidence = loadHead(model, "confidence", config.confidenceProbes, config.confidenceQueries, 1, headRows);
  embedding =
      loadHead(model, "embedding_head", config.embeddingProbes, config.embeddingQueries, config.embeddingDim, headRows);
}

} // namespace needle::reference
