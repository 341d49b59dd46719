// Whole-sequence mode: every block runs over all positions before the next block starts;
// taps, engram taps and attention index the full per-block arrays of the sequence.
#include "Reference/Block.h"
#include "Reference/Interpreter.h"
#include "Support/Error.h"

#include <cmath>

namespace needle::reference {

void checkTokens(const Config &c, std::span<const int32_t> tokens, int64_t held) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocabSize)
      fail("--tokens: token {} (at index {}) is outside 0..{}", tokens[i], i, c.vocabSize - 1);
  if (held + static_cast<int64_t>(tokens.size()) > c.maxSeqLen)
    fail("--tokens: {} tokens exceed max_seq_len {}", held + static_cast<int64_t>(tokens.size()), c.maxSeqLen);
}

Outputs outputsBeforeAnyToken(const Config &c, float confidenceBias) {
  Outputs out;
  out.logits.assign(c.vocabSize, 0.0f);
  out.embedding.assign(c.embeddingDim, 0.0f);
  out.confidence = sigmoid(confidenceBias);
  return out;
}

namespace {

/// z_t = sum_{i < taps, t - i >= 0} tap[i] * raw_{t - stride * i}, for every t.
std::vector<Vec> tapsOverTime(const std::vector<Vec> &raw, std::span<const float> taps, int64_t count, int64_t stride) {
  std::vector<Vec> out(raw.size());
  const size_t width = raw.empty() ? 0 : raw[0].size();
  for (int64_t t = 0; t < static_cast<int64_t>(raw.size()); ++t) {
    out[t].assign(width, 0.0f);
    for (size_t e = 0; e < width; ++e) {
      double sum = 0;
      for (int64_t i = 0; i < count && t - stride * i >= 0; ++i)
        sum += static_cast<double>(taps[i * width + e]) * raw[t - stride * i][e];
      out[t][e] = static_cast<float>(sum);
    }
  }
  return out;
}

} // namespace

Outputs runSequence(const Weights &w, std::span<const int32_t> tokens) {
  const Config &c = w.config;
  checkTokens(c, tokens);
  const int64_t T = static_cast<int64_t>(tokens.size()), D = c.dModel;
  if (T == 0)
    return outputsBeforeAnyToken(c, w.confidence.bias[0]);
  Outputs out;
  out.position = T;
  std::vector<Lanes> lanes(T);
  std::vector<Cells> cells(T);
  const float scale = std::sqrt(static_cast<float>(D));
  for (int64_t t = 0; t < T; ++t) {
    Vec x0(w.embed.begin() + tokens[t] * D, w.embed.begin() + (tokens[t] + 1) * D);
    for (float &v : x0)
      v *= scale;
    lanes[t] = {x0, x0, x0, x0};
    cells[t].push_back(std::move(x0));
  }
  for (size_t p = 0; p < w.blocks.size(); ++p) {
    const BlockWeights &b = w.blocks[p];
    std::vector<Vec> engramKey(T), engramValue(T);
    if (b.site >= 0) {
      const EngramWeights &site = w.sites[b.site];
      std::vector<Vec> rawValue(T);
      for (int64_t t = 0; t < T; ++t) {
        const Vec e = engramRow(w, site, tokens, t);
        engramKey[t] = matvec(site.key, D, e);
        rawValue[t] = matvec(site.value, D, e);
      }
      engramValue = tapsOverTime(rawValue, site.taps, 4, c.engramDelta());
    }
    std::vector<LaneMix> mixes(T);
    std::vector<Vec> u(T), x(T), gate(T), rawQ(T), rawK(T), rawV(T);
    for (int64_t t = 0; t < T; ++t) {
      mixes[t] = laneMix(w, b, lanes[t], static_cast<int64_t>(p));
      u[t] = readLanes(mixes[t], lanes[t]);
      x[t] = b.site >= 0 ? addEngram(u[t], engramKey[t], engramValue[t], w.eps) : u[t];
      Projections proj = project(w, b, x[t]);
      rawQ[t] = std::move(proj.q), rawK[t] = std::move(proj.k), rawV[t] = std::move(proj.v);
      gate[t] = std::move(proj.gate);
    }
    std::vector<Vec> q = rawQ, k = rawK, v = rawV;
    if (c.qkvConvTaps > 0) {
      q = tapsOverTime(rawQ, b.qTaps, c.qkvConvTaps, 1);
      k = tapsOverTime(rawK, b.kTaps, c.qkvConvTaps, 1);
      v = tapsOverTime(rawV, b.vTaps, c.qkvConvTaps, 1);
    }
    for (int64_t t = 0; t < T; ++t) {
      normalizeAndRotate(q[t], b.qNorm, c.numHeads, t, c.ropeTheta, w.eps);
      normalizeAndRotate(k[t], b.kNorm, c.numKvHeads, t, c.ropeTheta, w.eps);
    }
    for (int64_t t = 0; t < T; ++t) {
      const Vec o = attend(q[t], k, v, firstVisible(b.window, t), t, c.numHeads, c.numKvHeads);
      writeLanes(mixes[t], lanes[t], afterAttention(w, b, x[t], u[t], o, gate[t]));
      cells[t].push_back(meanOfLanes(lanes[t]));
    }
  }
  out.logits = logitsFrom(w, lanes[T - 1]);
  out.confidence = confidenceFrom(w.confidence, poolDirect(w.confidence, cells, tokens));
  out.embedding = embeddingFrom(w.embedding, poolDirect(w.embedding, cells, tokens));
  return out;
}

} // namespace needle::reference
