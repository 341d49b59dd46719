// The intelligence ladder of docs/model.md: bisection order and the blocks kept at a depth.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace needle {

/// Bisection order for `numLayers` blocks: start [0, L-1], then repeatedly split the widest gap
/// between adjacent chosen ids (leftmost on ties) at floor((a+b)/2).
std::vector<int64_t> bisectionOrder(int64_t numLayers);

/// Why `depth` is not a ladder depth of a `numLayers`-block model (2 <= depth <= numLayers;
/// depth == numLayers is always valid), or nothing when it is one. Shared by the file-level
/// slicer and the needle-slice-depth pass, which report it each in their own way.
std::optional<std::string> depthProblem(int64_t depth, int64_t numLayers);

/// Throws "<source>: --layers: <depthProblem>" when `depth` is not a ladder depth.
void validateDepth(int64_t depth, int64_t numLayers, std::string_view source);

/// sorted(order[:depth]).
std::vector<int64_t> keptBlocks(const std::vector<int64_t> &order, int64_t depth);

} // namespace needle
