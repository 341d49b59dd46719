// The per-position pieces of a ladder block (docs/model.md "Blocks"), shared by both interpreter
// modes and by the IR evaluator. Each takes exactly the values its formula needs. What differs
// between the modes (taps over time, attention over the past, pooling) lives in Sequence.cpp
// and Session.cpp.
#pragma once

#include "Reference/Weights.h"

#include <array>
#include <deque>
#include <span>

namespace needle::reference {

/// The mHC weights of one block at one position: h_pre, h_post and the Sinkhorn mix H.
struct LaneMix {
  std::array<float, 4> pre{}, post{};
  std::array<float, 16> res{};
};

/// nx = unit(concat(lanes)).
Vec laneNorm(const Lanes &lanes, float eps);
/// From the projections Φ_pre nx, Φ_post nx, Φ_res nx at lane position `position`.
LaneMix mhcGates(std::span<const float> pre, std::span<const float> post, std::span<const float> res,
                 std::span<const float> a, std::span<const float> bPre, std::span<const float> bPost,
                 std::span<const float> bRes, int64_t position);
/// laneNorm, the three projections and mhcGates for block b.
LaneMix laneMix(const Weights &w, const BlockWeights &b, const Lanes &lanes, int64_t position);
/// u = sum_l h_pre[l] lane_l.
Vec readLanes(const LaneMix &mix, const Lanes &lanes);
/// lane_i <- sum_k H[i][k] lane_k + h_post[i] y.
void writeLanes(const LaneMix &mix, Lanes &lanes, const Vec &y);
Vec meanOfLanes(const Lanes &lanes);

/// e_t: the engram table rows of every (order, head) concatenated, zeros where t < order - 1.
Vec engramRow(const Weights &w, const EngramWeights &site, std::span<const int32_t> tokens, int64_t t);
/// x = u + sigmoid(<unit(u), unit(k)> / sqrt(D)) v.
Vec addEngram(const Vec &u, const Vec &key, const Vec &value, float eps);

/// Causal taps at one position: tap[0] * current + sum_{i >= 1} tap[i] * history[stride * i - 1],
/// history newest first (terms before position 0 are simply not there).
Vec applyTaps(const Vec &current, const std::deque<Vec> &history, std::span<const float> taps, int64_t count,
              int64_t stride);
/// Pushes `value` as the newest history entry, keeping at most `keep`.
void remember(std::deque<Vec> &history, Vec value, size_t keep);

/// s = zc(x; attn_norm) and its projections, before taps.
struct Projections {
  Vec s, q, k, v, gate;
};
Projections project(const Weights &w, const BlockWeights &b, const Vec &x);

/// Per head: zc(.; norm), then RoPE at position t. In place on [heads * d].
void normalizeAndRotate(Vec &z, std::span<const float> norm, int64_t heads, int64_t t, double theta, float eps);

/// First key position query t may see: 0 for global attention (window 0), else t - window + 1.
int64_t firstVisible(int64_t window, int64_t t);

/// One query against keys/values at positions [first, t]: o = concat_h sum alpha v, with
/// alpha = softmax(q.k / sqrt(dqk)); head h reads kv head h / (heads / kvHeads).
Vec attend(const Vec &q, std::span<const Vec> keys, std::span<const Vec> values, int64_t first, int64_t t,
           int64_t heads, int64_t kvHeads);

/// o * sigmoid(gate).
Vec sigmoidGate(const Vec &o, const Vec &gate);
/// x1 = x + sigmoid(gate) zc(a; norm).
Vec residualGate(const Vec &x, const Vec &a, std::span<const float> norm, float gate, float eps);
/// The Kronecker MLP on m = zc(x1; mlp_norm).
Vec kronMlp(const MlpWeights &mlp, const Vec &x1, float eps);
/// y = x1 + y_mlp - u.
Vec blockUpdate(const Vec &x1, const Vec &mlp, const Vec &u);

/// The whole block after attention: a = Wo(o * sigmoid(gate)), x1, the MLP, the update y.
Vec afterAttention(const Weights &w, const BlockWeights &b, const Vec &x, const Vec &u, const Vec &o, const Vec &gate);

/// Final norm and tied logits from the lanes of the last position.
Vec logitsFrom(const Weights &w, const Lanes &lanes);

} // namespace needle::reference
