// The confidence and embedding heads (docs/model.md "Heads"): pooling cells into R[r, k], then
// the query mix and the projections.
#pragma once

#include "Reference/Weights.h"

#include <vector>

namespace needle::reference {

/// Cells of one position: [x0, c_first_kept_block, ..., c_last_kept_block].
using Cells = std::vector<Vec>;

/// Pools with a softmax over all positions at once; positions whose token is the pad are left out.
std::vector<Vec> poolDirect(const HeadWeights &head, const std::vector<Cells> &cells, std::span<const int32_t> tokens);

/// The same pooling, one position at a time, with running (online-softmax) state.
class OnlinePool {
public:
  explicit OnlinePool(const HeadWeights &head);
  /// Adds one position's cells (the caller leaves pads out).
  void add(const Cells &cells);
  std::vector<Vec> pooled() const;

private:
  struct Slot {
    double max = 0, sum = 0;
    std::vector<double> acc;
  };
  const HeadWeights &head_;
  std::vector<Slot> slots_; // [rows * probes]
  bool any_ = false;
};

/// sigmoid(proj . pooled + bias) from R.
float confidenceFrom(const HeadWeights &head, const std::vector<Vec> &R);
/// p / sqrt(sum p^2 + 1e-12) with p = proj . pooled.
Vec embeddingFrom(const HeadWeights &head, const std::vector<Vec> &R);

} // namespace needle::reference
