#include "Reference/Block.h"

#include <cmath>

namespace needle::reference {

LaneMix laneMix(const Weights &w, const BlockWeights &b, const Lanes &lanes, int64_t position) {
  Vec concat;
  for (const Vec &lane : lanes)
    concat.insert(concat.end(), lane.begin(), lane.end());
  const Vec nx = unit(concat, w.eps);
  const Vec pre = matvec(b.phiPre, 4, nx), post = matvec(b.phiPost, 4, nx), res = matvec(b.phiRes, 16, nx);
  const int64_t own = position % 4;
  LaneMix mix;
  for (int l = 0; l < 4; ++l) {
    const float one = l == own ? 1.0f : 0.0f;
    mix.pre[l] = sigmoid(b.a[0] * pre[l] + b.bPre[l] + 8.0f * one - 4.0f);
    mix.post[l] = 2.0f * sigmoid(b.a[1] * post[l] + b.bPost[l] - 4.0f * (1.0f - one));
  }
  std::array<float, 16> logits;
  for (int i = 0; i < 16; ++i)
    logits[i] = b.a[2] * res[i] + b.bRes[i];
  mix.res = sinkhorn(logits);
  return mix;
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
      const float *row = site.tables.data() + (table * slots + slot) * sub;
      std::copy(row, row + sub, e.begin() + table * sub);
    }
  }
  return e;
}

Vec addEngram(const Weights &w, const Vec &u, const Vec &key, const Vec &value) {
  const float gate = sigmoid(dot(unit(u, w.eps), unit(key, w.eps)) / std::sqrt(static_cast<float>(u.size())));
  Vec x = u;
  for (size_t i = 0; i < x.size(); ++i)
    x[i] += gate * value[i];
  return x;
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

void normalizeAndRotate(const Weights &w, Vec &z, std::span<const float> norm, int64_t heads, int64_t t) {
  const int64_t d = w.config.qkHeadDim;
  for (int64_t h = 0; h < heads; ++h) {
    std::span<float> head(z.data() + h * d, d);
    const Vec normalized = zc(head, norm, w.eps);
    std::copy(normalized.begin(), normalized.end(), head.begin());
    rope(head, t, w.config.ropeTheta);
  }
}

int64_t firstVisible(const Weights &w, const BlockWeights &b, int64_t t) {
  return b.global ? 0 : std::max<int64_t>(0, t - w.config.slidingWindow + 1);
}

Vec attend(const Weights &w, const Vec &q, std::span<const Vec> keys, std::span<const Vec> values, int64_t first,
           int64_t t) {
  const Config &c = w.config;
  const int64_t dqk = c.qkHeadDim, dv = c.vHeadDim, group = c.numHeads / c.numKvHeads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dqk));
  Vec o(c.numHeads * dv, 0.0f);
  Vec scores(t - first + 1);
  for (int64_t h = 0; h < c.numHeads; ++h) {
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

/// The Kronecker MLP on m = zc(x1; mlp_norm).
Vec mlp(const Weights &w, const BlockWeights &b, const Vec &x1) {
  const Config &c = w.config;
  const int64_t n = c.mlpWidth(), ba = c.mlpRows(), bb = c.mlpCols(), D = c.dModel;
  const Vec m = zc(x1, b.mlpNorm, w.eps);
  Vec mix(8);
  for (int j = 0; j < 8; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < D; ++i)
      sum += static_cast<double>(b.condV[i * 8 + j]) * m[i];
    mix[j] = static_cast<float>(sum);
  }
  softmax(mix);
  Vec cond(n);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = 0; j < 8; ++j)
      sum += static_cast<double>(mix[j]) * b.condU[j * n + i];
    cond[i] = 1.0f + static_cast<float>(sum);
  }
  Vec z(n, 0.0f);
  std::copy(m.begin(), m.end(), z.begin());
  for (int64_t i = 0; i < n; ++i)
    z[i] *= b.d1[i];
  z = permute(kronecker(z, b.w1a, b.w1b, ba, bb), w.p1);
  for (int64_t i = 0; i < n; ++i)
    z[i] = silu(b.d2[i] * cond[i] * z[i] + b.b2[i]);
  z = permute(kronecker(z, b.w2a, b.w2b, ba, bb), w.p2);
  for (int64_t i = 0; i < n; ++i)
    z[i] *= b.d3[i];
  z = kronecker(z, b.w3a, b.w3b, ba, bb);
  Vec y(D);
  for (int64_t i = 0; i < D; ++i)
    y[i] = b.d4[i] * z[i];
  return y;
}

} // namespace

Vec blockUpdate(const Weights &w, const BlockWeights &b, const Vec &x, const Vec &u, const Vec &o,
                const Vec &gate) {
  const int64_t D = w.config.dModel;
  Vec gated(o.size());
  for (size_t i = 0; i < o.size(); ++i)
    gated[i] = o[i] * sigmoid(gate[i]);
  const Vec a = zc(matvec(b.o, D, gated), b.postAttnNorm, w.eps);
  const float g = sigmoid(b.attnGate);
  Vec x1(D);
  for (int64_t i = 0; i < D; ++i)
    x1[i] = x[i] + g * a[i];
  const Vec mlpOut = mlp(w, b, x1);
  Vec y(D);
  for (int64_t i = 0; i < D; ++i)
    y[i] = x1[i] + mlpOut[i] - u[i];
  return y;
}

Vec logitsFrom(const Weights &w, const Lanes &lanes) {
  const Vec xf = zc(meanOfLanes(lanes), w.finalNorm, w.eps);
  return matvec(w.embed, w.config.vocabSize, xf);
}

} // namespace needle::reference
