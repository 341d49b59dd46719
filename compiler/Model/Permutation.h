// The MLP permutations Needle draws when mlp.p1 / mlp.p2 are absent: numpy's legacy
// RandomState(seed).permutation(n), reproduced exactly (MT19937 + Fisher-Yates with masked
// rejection sampling).
#pragma once

#include "Model/Model.h"

#include <cstdint>
#include <vector>

namespace needle {

std::vector<int32_t> numpyLegacyPermutation(uint32_t seed, uint32_t n);

/// mlp.p1 (which = 1) or mlp.p2 (which = 2): the model's tensor, or Needle's default draw.
std::vector<int32_t> mlpPermutation(const Model &model, int which);

} // namespace needle
