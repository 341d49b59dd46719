// The per-position pieces of a ladder block (spec/model.md "Blocks") shared by both interpreter
// modes. What differs between the modes (taps over time, attention over the past, pooling)
// lives in Sequence.cpp and Session.cpp.
#pragma once

#include "Reference/Weights.h"

#include <array>
#include <span>

namespace needle::reference {

/// The mHC weights of one block at one position: h_pre, h_post and the Sinkhorn mix H.
struct LaneMix {
  std::array<float, 4> pre{}, post{};
  std::array<float, 16> res{};
};

/// From nx = unit(concat(lanes)); `position` is the block's index among the kept blocks.
LaneMix laneMix(const Weights &w, const BlockWeights &b, const Lanes &lanes, int64_t position);
/// u = sum_l h_pre[l] lane_l.
Vec readLanes(const LaneMix &mix, const Lanes &lanes);
/// lane_i <- sum_k H[i][k] lane_k + h_post[i] y.
void writeLanes(const LaneMix &mix, Lanes &lanes, const Vec &y);
Vec meanOfLanes(const Lanes &lanes);

/// e_t: the engram table rows of every (order, head) concatenated, zeros where t < order - 1.
Vec engramRow(const Weights &w, const EngramWeights &site, std::span<const int32_t> tokens, int64_t t);
/// x = u + sigmoid(<unit(u), unit(k)> / sqrt(D)) v.
Vec addEngram(const Weights &w, const Vec &u, const Vec &key, const Vec &value);

/// s = zc(x; attn_norm) and its projections, before taps.
struct Projections {
  Vec s, q, k, v, gate;
};
Projections project(const Weights &w, const BlockWeights &b, const Vec &x);

/// Per head: zc(.; norm), then RoPE at position t. In place on [heads * d].
void normalizeAndRotate(const Weights &w, Vec &z, std::span<const float> norm, int64_t heads, int64_t t);

/// First key position query t may see in block b.
int64_t firstVisible(const Weights &w, const BlockWeights &b, int64_t t);

/// One query against keys/values at positions [first, t]: o = concat_h sum alpha v, with
/// alpha = softmax(q.k / sqrt(dqk)); head h reads kv head h / (Hq / Hkv).
Vec attend(const Weights &w, const Vec &q, std::span<const Vec> keys, std::span<const Vec> values, int64_t first,
           int64_t t);

/// The rest of the block after attention: a = Wo(o * sigmoid(gate)), x1, the MLP, and the
/// block's update y = x1 + y_mlp - u.
Vec blockUpdate(const Weights &w, const BlockWeights &b, const Vec &x, const Vec &u, const Vec &o,
                const Vec &gate);

/// Final norm and tied logits from the lanes of the last position.
Vec logitsFrom(const Weights &w, const Lanes &lanes);

} // namespace needle::reference
