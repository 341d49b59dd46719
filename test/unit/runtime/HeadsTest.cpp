// The runtime's kernels of the pooling heads (runtime/kernels/heads.h), against the reference (RuntimeTestSupport.h
// says how).
#include "RuntimeTestSupport.h"

#include "Quant/Cq.h"
#include "Reference/Block.h"
#include "Reference/Heads.h"
#include "Reference/Kernels.h"
#include "Support/Half.h"
#include "codegen/Select/WeightLayouts.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <tuple>

using namespace needle;
using namespace needle::runtime_test;
namespace ref = needle::reference;

namespace {

ref::HeadWeights headWeights(const std::string &tag, int64_t rows, int64_t probes, int64_t queries, int64_t D,
                             int64_t outDim, bool bias) {
  ref::HeadWeights h;
  h.rows = rows, h.probes = probes, h.queries = queries, h.outDim = outDim, h.dModel = D;
  h.eps = 1e-6f, h.pad = 0;
  h.probeVectors = normals(tag + " probes", rows * probes * D, 0.5);
  h.gain = normals(tag + " gain", rows * probes, 1.0);
  h.query = normals(tag + " query", queries * D, 1.0);
  h.rowBias = normals(tag + " row bias", queries * rows * probes, 1.0);
  h.proj = normals(tag + " proj", outDim * queries * D, 1.0 / std::sqrt(double(queries * D)));
  if (bias)
    h.bias = normals(tag + " bias", 1);
  return h;
}

/// Where each row's probes start, as head_pool_add takes them.
std::vector<const float *> probeRows(const ref::HeadWeights &h) {
  std::vector<const float *> rows;
  for (int64_t r = 0; r < h.rows; ++r)
    rows.push_back(h.probeVectors.data() + r * h.probes * h.dModel);
  return rows;
}

/// The runtime's pooled vector for its state, as head_pool_finish gives it.
Vec finish(const ref::HeadWeights &h, const Vec &state) {
  Vec scratch(needle_rt::head_finish_scratch_floats(h.rows, h.probes), 1e30f), pooled(h.queries * h.dModel);
  needle_rt::head_pool_finish(state.data(), h.rows, h.probes, h.dModel, h.gain.data(), h.query.data(), h.rowBias.data(),
                              h.queries, h.eps, scratch.data(), pooled.data());
  return pooled;
}

TEST(RuntimeHeads, HeadPoolingConfidenceAndEmbedding) {
  const int64_t rows = 4, probes = 3, queries = 2, D = 32, outDim = 5;
  const ref::HeadWeights conf = headWeights("confidence", rows, probes, queries, D, 1, true);
  const ref::HeadWeights emb = headWeights("embedding", rows, probes, queries, D, outDim, false);
  ref::OnlinePool confPool(conf), embPool(emb);
  Vec confState(needle_rt::head_state_floats(rows, probes, D), 0.0f), embState(confState);

  auto check = [&](const std::string &at) {
    const Vec pooled = finish(conf, confState);
    const float confidence = needle_rt::head_confidence(pooled.data(), conf.proj.data(), conf.bias[0], queries * D);
    expectClose(confidence, ref::confidenceFrom(conf, confPool.pooled()), 1e-5, "confidence " + at);
    Vec embedding(outDim);
    needle_rt::head_embedding(finish(emb, embState).data(), emb.proj.data(), outDim, queries * D, embedding.data());
    expectClose(embedding, ref::embeddingFrom(emb, embPool.pooled()), 1e-5, "embedding " + at);
  };

  check("before any position"); // R = 0: σ(bias) and a zero embedding
  EXPECT_EQ(ref::embeddingFrom(emb, embPool.pooled()), Vec(outDim, 0.0f));

  for (int64_t t = 0; t < 12; ++t) {
    // Cells of growing size: later scores beat the running max and rescale the old sums.
    std::vector<Vec> cells;
    std::vector<const float *> pointers;
    for (int64_t r = 0; r < rows; ++r)
      cells.push_back(normals("cell " + std::to_string(t) + " " + std::to_string(r), D, 1.0 + 0.3 * t));
    for (const Vec &c : cells)
      pointers.push_back(c.data());
    const bool pad = t == 2 || t == 7; // the caller leaves pad positions out
    if (!pad) {
      confPool.add(cells);
      embPool.add(cells);
      needle_rt::head_pool_add(confState.data(), rows, probes, D, pointers.data(), probeRows(conf).data());
      needle_rt::head_pool_add(embState.data(), rows, probes, D, pointers.data(), probeRows(emb).data());
    }
    check("t=" + std::to_string(t));
  }
}

TEST(RuntimeHeads, HeadPoolingExtremeScores) {
  // Scores of order ±150: e^score under- or overflows f32 unless taken relative to the running max.
  const int64_t rows = 3, probes = 4, queries = 2, D = 32, outDim = 6;
  const ref::HeadWeights emb = headWeights("extreme", rows, probes, queries, D, outDim, false);
  ref::OnlinePool pool(emb);
  Vec state(needle_rt::head_state_floats(rows, probes, D), 0.0f);
  for (int64_t t = 0; t < 8; ++t) {
    std::vector<Vec> cells;
    for (int64_t r = 0; r < rows; ++r)
      cells.push_back(normals("extreme " + std::to_string(t) + " " + std::to_string(r), D, 300.0));
    const float *pointers[] = {cells[0].data(), cells[1].data(), cells[2].data()};
    pool.add(cells);
    needle_rt::head_pool_add(state.data(), rows, probes, D, pointers, probeRows(emb).data());
    Vec embedding(outDim);
    needle_rt::head_embedding(finish(emb, state).data(), emb.proj.data(), outDim, queries * D, embedding.data());
    expectClose(embedding, ref::embeddingFrom(emb, pool.pooled()), 1e-5,
                "embedding, extreme scores t=" + std::to_string(t));
  }
}

TEST(RuntimeHeads, HeadPoolingOnePosition) {
  // The first kept position starts the state (its score becomes the max); it is not blended with zeros.
  const int64_t rows = 2, probes = 2, queries = 3, D = 16;
  const ref::HeadWeights conf = headWeights("one position", rows, probes, queries, D, 1, true);
  ref::OnlinePool pool(conf);
  Vec state(needle_rt::head_state_floats(rows, probes, D), 0.0f);
  std::vector<Vec> cells = {normals("pf0", D, 5.0), normals("pf1", D, 5.0)};
  const float *pointers[] = {cells[0].data(), cells[1].data()};
  pool.add(cells);
  needle_rt::head_pool_add(state.data(), rows, probes, D, pointers, probeRows(conf).data());
  const Vec pooled = finish(conf, state);
  expectClose(needle_rt::head_confidence(pooled.data(), conf.proj.data(), conf.bias[0], queries * D),
              ref::confidenceFrom(conf, pool.pooled()), 1e-5, "confidence after one position");
}

} // namespace
