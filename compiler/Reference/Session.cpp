// Incremental mode: one token at a time through every block, keeping only what later tokens
// need: the last taps-1 raw projections, the keys and values, the last 3*delta engram values
// and the running pooling state of the heads.
#include "Reference/Block.h"
#include "Reference/Interpreter.h"

#include <algorithm>
#include <cmath>

namespace needle::reference {

Session::Session(const Weights &w)
    : w_(w), blocks_(w.blocks.size()), sites_(w.sites.size()), confidencePool_(w.confidence),
      embeddingPool_(w.embedding) {}

void Session::feed(std::span<const int32_t> tokens) {
  checkTokens(w_.config, tokens, position());
  for (int32_t token : tokens)
    step(token);
}

void Session::step(int32_t token) {
  const Config &c = w_.config;
  const int64_t D = c.dModel, t = position();
  const size_t tapHistory = c.qkvConvTaps > 0 ? static_cast<size_t>(c.qkvConvTaps - 1) : 0;
  tokens_.push_back(token);
  Vec x0(w_.embed.begin() + token * D, w_.embed.begin() + (token + 1) * D);
  const float scale = std::sqrt(static_cast<float>(D));
  for (float &v : x0)
    v *= scale;
  Lanes lanes = {x0, x0, x0, x0};
  Cells cells = {std::move(x0)};
  for (size_t p = 0; p < w_.blocks.size(); ++p) {
    const BlockWeights &b = w_.blocks[p];
    BlockState &state = blocks_[p];
    const LaneMix mix = laneMix(w_, b, lanes, static_cast<int64_t>(p));
    const Vec u = readLanes(mix, lanes);
    Vec x = u;
    if (b.site >= 0) {
      const EngramWeights &site = w_.sites[b.site];
      const Vec e = engramRow(w_, site, tokens_, t);
      Vec rawValue = matvec(site.value, D, e);
      std::deque<Vec> &history = sites_[b.site].values;
      const Vec value = applyTaps(rawValue, history, site.taps, 4, c.engramDelta());
      x = addEngram(u, matvec(site.key, D, e), value, w_.eps);
      remember(history, std::move(rawValue), 3 * c.engramDelta());
    }
    Projections proj = project(w_, b, x);
    Vec q = proj.q, k = proj.k, v = proj.v;
    if (c.qkvConvTaps > 0) {
      q = applyTaps(proj.q, state.q, b.qTaps, c.qkvConvTaps, 1);
      k = applyTaps(proj.k, state.k, b.kTaps, c.qkvConvTaps, 1);
      v = applyTaps(proj.v, state.v, b.vTaps, c.qkvConvTaps, 1);
      remember(state.q, std::move(proj.q), tapHistory);
      remember(state.k, std::move(proj.k), tapHistory);
      remember(state.v, std::move(proj.v), tapHistory);
    }
    normalizeAndRotate(q, b.qNorm, c.numHeads, t, c.ropeTheta, w_.eps);
    normalizeAndRotate(k, b.kNorm, c.numKvHeads, t, c.ropeTheta, w_.eps);
    state.keys.push_back(std::move(k));
    state.values.push_back(std::move(v));
    const Vec o = attend(q, state.keys, state.values, firstVisible(b.window, t), t, c.numHeads, c.numKvHeads);
    writeLanes(mix, lanes, afterAttention(w_, b, x, u, o, proj.gate));
    cells.push_back(meanOfLanes(lanes));
  }
  if (token != c.padTokenId) {
    confidencePool_.add(cells);
    embeddingPool_.add(cells);
  }
  lanes_ = std::move(lanes);
}

Outputs Session::outputs() const {
  if (!position())
    return outputsBeforeAnyToken(w_.config, w_.confidence.bias[0]);
  Outputs out;
  out.position = position();
  out.logits = logitsFrom(w_, lanes_);
  out.confidence = confidenceFrom(w_.confidence, confidencePool_.pooled());
  out.embedding = embeddingFrom(w_.embedding, embeddingPool_.pooled());
  return out;
}

Vec Session::embedding() const {
  if (!position())
    return Vec(static_cast<size_t>(w_.config.embeddingDim), 0.0f);
  return embeddingFrom(w_.embedding, embeddingPool_.pooled());
}

std::vector<Vec> embedEach(const Weights &weights, const std::vector<std::vector<int32_t>> &texts) {
  std::vector<Vec> out;
  for (const std::vector<int32_t> &ids : texts) {
    Session session(weights);
    const size_t kept = std::min(ids.size(), static_cast<size_t>(weights.config.maxSeqLen));
    session.feed(std::span(ids.data(), kept));
    out.push_back(session.embedding());
  }
  return out;
}

} // namespace needle::reference
