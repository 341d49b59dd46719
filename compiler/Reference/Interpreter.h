// The reference interpreter: docs/model.md in plain f32 C++, the oracle every pass, backend
// and target is checked against. Two modes that must agree: the whole sequence at once
// (layer by layer over all positions), and a session fed token by token with its KV, tap and
// pooling state.
#pragma once

#include "Reference/Heads.h"
#include "Reference/Weights.h"

#include <deque>
#include <span>

namespace needle::reference {

/// What the model says about the last position fed.
struct Outputs {
  Vec logits; // [vocab_size]
  float confidence = 0;
  Vec embedding;        // [embedding_dim]
  int64_t position = 0; // tokens held
};

/// Rejects tokens outside [0, vocab_size) and sequences past max_seq_len (after `held`).
void checkTokens(const Config &config, std::span<const int32_t> tokens, int64_t held = 0);

/// What the model says before any token: zero logits and embedding, confidence sigmoid(bias).
Outputs outputsBeforeAnyToken(const Config &config, float confidenceBias);

/// Whole-sequence mode.
Outputs runSequence(const Weights &w, std::span<const int32_t> tokens);

/// Incremental mode.
class Session {
public:
  explicit Session(const Weights &w);
  /// Appends tokens; on a bad token or a full session it throws and the state is unchanged.
  void feed(std::span<const int32_t> tokens);
  Outputs outputs() const;
  /// The embedding alone, without the logits outputs() computes: zeros before any token.
  Vec embedding() const;
  int64_t position() const { return static_cast<int64_t>(tokens_.size()); }

private:
  struct BlockState {
    std::deque<Vec> q, k, v;       // raw projections of the previous taps-1 positions, newest first
    std::vector<Vec> keys, values; // normalized, rotated keys and values of every position
  };
  struct SiteState {
    std::deque<Vec> values; // v' of the previous 3 * delta positions, newest first
  };

  void step(int32_t token);

  const Weights &w_;
  std::vector<int32_t> tokens_;
  std::vector<BlockState> blocks_;
  std::vector<SiteState> sites_;
  OnlinePool confidencePool_, embeddingPool_;
  Lanes lanes_; // of the last position
};

/// The embedding of each of `texts` (ids), each fed to a session of its own: at most max_seq_len
/// ids of each (the rest are left out).
std::vector<Vec> embedEach(const Weights &w, const std::vector<std::vector<int32_t>> &texts);

} // namespace needle::reference
