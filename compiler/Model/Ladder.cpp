#include "Model/Ladder.h"

#include "Support/Error.h"

#include <algorithm>
#include <set>

namespace needle {

std::vector<int64_t> bisectionOrder(int64_t numLayers) {
  if (numLayers == 1)
    return {0};
  std::vector<int64_t> order = {0, numLayers - 1};
  std::set<int64_t> chosen(order.begin(), order.end());
  while (static_cast<int64_t>(order.size()) < numLayers) {
    int64_t bestLeft = 0, bestWidth = 0;
    for (auto it = chosen.begin(); std::next(it) != chosen.end(); ++it) {
      int64_t width = *std::next(it) - *it;
      if (width > bestWidth) { // strict: the leftmost widest gap wins a tie
        bestWidth = width;
        bestLeft = *it;
      }
    }
    int64_t split = bestLeft + bestWidth / 2; // floor((a + b) / 2) for a, b >= 0
    order.push_back(split);
    chosen.insert(split);
  }
  return order;
}

std::optional<std::string> depthProblem(int64_t depth, int64_t numLayers) {
  if (depth == numLayers)
    return std::nullopt; // the whole model is always a valid depth
  if (numLayers < 2)
    return fmt::format("the model has {} block, a ladder needs at least 2", numLayers);
  if (depth < 2 || depth > numLayers)
    return fmt::format("depth {} is outside 2..{}", depth, numLayers);
  return std::nullopt;
}

void validateDepth(int64_t depth, int64_t numLayers, std::string_view source) {
  if (std::optional<std::string> problem = depthProblem(depth, numLayers))
    fail("{}: --layers: {}", source, *problem);
}

std::vector<int64_t> keptBlocks(const std::vector<int64_t> &order, int64_t depth) {
  std::vector<int64_t> kept(order.begin(), order.begin() + depth);
  std::sort(kept.begin(), kept.end());
  return kept;
}

} // namespace needle
