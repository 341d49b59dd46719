#include "Reference/Block.h"

#include <cmath>

namespace needle::reference {

Vec laneNorm(const Lanes &lanes, float eps) {
  Vec concat;
  for (const Vec &lane : lanes)
    concat.insert(concat.end(), lane.begin(), lane.end());
  return unit(concat, eps);
}

LaneMix mhcGates(std::span<const float> pre, std::span<const float> post, std::span<const float> res,
                 std::span<const float> a, std::span<const float> bPre, std::span<const float> bPost,
                 std::span<const float> bRes, int64_t position) {
  const int64_t own = position % 4;
  LaneMix mix;
  for (int l = 0; l < 4; ++l) {
    const float one = l == own ? 1.0f : 0.0f;
    mix.pre[l] = sigmoid(a[0] * pre[l] + bPre[l] + 8.0f * one - 4.0f);
    mix.post[l] = 2.0f * sigmoid(a[1] * post[l] + bPost[l] - 4.0f * (1.0f - one));
  }
  std::array<float, 16> logits;
  for (int i = 0; i < 16; ++i)
    logits[i] = a[2] * res[i] + bRes[i];
  mix.res = sinkhorn(logits);
  return mix;
}

LaneMix laneMix(const Weights &w, const BlockWeights &b, const Lanes &lanes, int64_t position) {
  const Vec nx = laneNorm(lanes, w.eps);
  return mhcGates(matvec(b.phiPre, 4, nx), matvec(b.phiPost, 4, nx), matvec(b.phiRes, 16, nx), b.a, b.bPre, b.bPost,
                  b.bRes, position);
}

Vec readLanes(const LaneMix &mix, const Lanes &lanes) {
  Vec u(lanes[0].size(), 0.0f);
  for (int l = 0; l < 4; ++l)
    for (size_t i = 0; i < u.size(); ++i)
      u[i] += mix.pre[l] * lanes[l][i];
  return u;
}

void writeLanes(const LaneMix &mix, Lanes &lanes, const Vec &y) {
  Lanes next;
  for (int i = 0; i < 4; ++i) {
    next[i].assign(y.size(), 0.0f);
    for (size_t e = 0; e < y.size(); ++e) {
      double sum = static_cast<double>(mix.post[i]) * y[e];
      for (int k = 0; k < 4; ++k)
        sum += static_cast<double>(mix.res[i * 4 + k]) * lanes[k][e];
      next[i][e] = static_cast<float>(sum);
    }
  }
  lanes = std::move(next);
}

Vec meanOfLanes(const Lanes &lanes) {
  Vec mean(lanes[0].size());
  for (size_t e = 0; e < mean.size(); ++e)
    mean[e] = static_cast<float>((static_cast<double>(lanes[0][e]) + lanes[1][e] + lanes[2][e] + lanes[3][e]) / 4.0);
  return mean;
}

Vec engramRow(const Weights &w, const EngramWeights &site, std::span<const int32_t> tokens, int64_t t) {
  const Config &c = w.config;
  const int64_t heads = c.engramHeadCount(), sub = c.engramSubDim(), slots = c.engramSlots;
  Vec e(c.dModel, 0.0f);
  for (size_t oi = 0; oi < c.engramOrders.size(); ++oi) {
    const int64_t order = c.engramOrders[oi];
    if (t < order - 1)
      continue;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t table = static_cast<int64_t>(oi) * heads + h;
      const uint32_t slot = engramSlot(tokens, t, static_cast<int64_t>(oi), order, h, heads, slots);
      const Vec row = site.tables.row(table * slots + slot);
      std::copy(row.begin(), row.end(), e.begin() + table * sub);
    }
  }
  return e;
}

Vec addEngram(const Vec &u, const Vec &key, const Vec &value, float eps) {
  const float gate = sigmoid(dot(unit(u, eps), unit(key, eps)) / std::sqrt(static_cast<float>(u.size())));
  Vec x = u;
  for (size_t i = 0; i < x.size(); ++i)
    x[i] += gate * value[i];
  return x;
}

Vec applyTaps(const Vec &current, const std::deque<Vec> &history, std::span<const float> taps, int64_t count,
              int64_t stride) {
  Vec out(current.size());
  for (size_t e = 0; e < current.size(); ++e) {
    double sum = static_cast<double>(taps[e]) * current[e];
    for (int64_t i = 1; i < count && static_cast<size_t>(stride * i) <= history.size(); ++i)
      sum += static_cast<double>(taps[i * current.size() + e]) * history[stride * i - 1][e];
    out[e] = static_cast<float>(sum);
  }
  return out;
}

void remember(std::deque<Vec> &history, Vec value, size_t keep) {
  history.push_front(std::move(value));
  if (history.size() > keep)
    history.pop_back();
}

Projections project(const Weights &w, const BlockWeights &b, const Vec &x) {
  const Config &c = w.config;
  Projections p;
  p.s = zc(x, b.attnNorm, w.eps);
  p.q = matvec(b.q, c.numHeads * c.qkHeadDim, p.s);
  p.k = matvec(b.k, c.numKvHeads * c.qkHeadDim, p.s);
  p.v = matvec(b.v, c.numKvHeads * c.vHeadDim, p.s);
  p.gate = matvec(b.gate, c.numHeads * c.vHeadDim, p.s);
  return p;
}

void normalizeAndRotate(Vec &z, std::span<const float> norm, int64_t heads, int64_t t, double theta, float eps) {
  const int64_t d = static_cast<int64_t>(z.size()) / heads;
  for (int64_t h = 0; h < heads; ++h) {
    std::span<float> head(z.data() + h * d, d);
    const Vec normalized = zc(head, norm, eps);
    std::copy(normalized.begin(), normalized.end(), head.begin());
    rope(head, t, theta);
  }
}

int64_t firstVisible(int64_t window, int64_t t) { return window == 0 ? 0 : std::max<int64_t>(0, t - window + 1); }

Vec attend(const Vec &q, std::span<const Vec> keys, std::span<const Vec> values, int64_t first, int64_t t,
           int64_t heads, int64_t kvHeads) {
  const int64_t dqk = static_cast<int64_t>(q.size()) / heads;
  const int64_t dv = static_cast<int64_t>(values[t].size()) / kvHeads, group = heads / kvHeads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dqk));
  Vec o(heads * dv, 0.0f);
  Vec scores(t - first + 1);
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t kv = h / group;
    std::span<const float> qh(q.data() + h * dqk, dqk);
    for (int64_t p = first; p <= t; ++p)
      scores[p - first] = dot(qh, std::span(keys[p].data() + kv * dqk, dqk)) * scale;
    softmax(scores);
    for (int64_t e = 0; e < dv; ++e) {
      double sum = 0;
      for (int64_t p = first; p <= t; ++p)
        sum += static_cast<double>(scores[p - first]) * values[p][kv * dv + e];
      o[h * dv + e] = static_cast<float>(sum);
    }
  }
  return o;
}

namespace {

Vec permute(const Vec &z, const std::vector<int32_t> &p) {
  Vec out(z.size());
  for (size_t i = 0; i < z.size(); ++i)
    out[i] = z[p[i]];
  return out;
}

} // namespace

Vec kronMlp(const MlpWeights &mlp, const Vec &x1, float eps) {
  const int64_t n = static_cast<int64_t>(mlp.d1.size()), D = static_cast<int64_t>(x1.size());
  const int64_t ba = mlp.rows, bb = mlp.cols;
  const Vec m = zc(x1, mlp.norm, eps);
  Vec mix(8);
  for (int j = 0; j < 8; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < D; ++i)
      sum += static_cast<double>(mlp.condV[i * 8 + j]) * m[i];
    mix[j] = static_cast<float>(sum);
  }
  softmax(mix);
  Vec cond(n);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < 8; ++j)
      sum += static_cast<double>(mix[j]) * mlp.condU[j * n + i];
    cond[i] = 1.0f + static_cast<float>(sum);
  }
  Vec z(n, 0.0f);
  std::copy(m.begin(), m.end(), z.begin());
  for (int64_t i = 0; i < n; ++i)
    z[i] *= mlp.d1[i];
  z = permute(kronecker(z, mlp.w1a, mlp.w1b, ba, bb), mlp.p1);
  for (int64_t i = 0; i < n; ++i)
    z[i] = silu(mlp.d2[i] * cond[i] * z[i] + mlp.b2[i]);
  z = permute(kronecker(z, mlp.w2a, mlp.w2b, ba, bb), mlp.p2);
  for (int64_t i = 0; i < n; ++i)
    z[i] *= mlp.d3[i];
  z = kronecker(z, mlp.w3a, mlp.w3b, ba, bb);
  Vec y(D);
  for (int64_t i = 0; i < D; ++i)
    y[i] = mlp.d4[i] * z[i];
  return y;
}

Vec sigmoidGate(const Vec &o, const Vec &gate) {
  Vec gated(o.size());
  for (size_t i = 0; i < o.size(); ++i)
    gated[i] = o[i] * sigmoid(gate[i]);
  return gated;
}

Vec residualGate(const Vec &x, const Vec &a, std::span<const float> norm, float gate, float eps) {
  const Vec normalized = zc(a, norm, eps);
  const float g = sigmoid(gate);
  Vec x1(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x1[i] = x[i] + g * normalized[i];
  return x1;
}

Vec blockUpdate(const Vec &x1, const Vec &mlp, const Vec &u) {
  Vec y(x1.size());
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = x1[i] + mlp[i] - u[i];
  return y;
}

Vec afterAttention(const Weights &w, const BlockWeights &b, const Vec &x, const Vec &u, const Vec &o, const Vec &gate) {
  const Vec a = matvec(b.o, w.config.dModel, sigmoidGate(o, gate));
  const Vec x1 = residualGate(x, a, b.postAttnNorm, b.attnGate, w.eps);
  return blockUpdate(x1, kronMlp(b.mlp, x1, w.eps), u);
}

Vec logitsFrom(const Weights &w, const Lanes &lanes) {
  const Vec xf = zc(meanOfLanes(lanes), w.finalNorm, w.eps);
  return matvec(w.embed, w.config.vocabSize, xf);
}

} // namespace needle::reference
