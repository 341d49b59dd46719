#include "Model/Ladder.h"
#include "Model/Permutation.h"
#include "Support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace needle;

namespace {

TEST(Ladder, BisectionOrderOfTwentyBlocksIsThePublishedOne) {
  EXPECT_EQ(bisectionOrder(20),
            (std::vector<int64_t>{0, 19, 9, 14, 4, 6, 11, 16, 2, 7, 12, 17, 1, 3, 5, 8, 10, 13, 15, 18}));
}

TEST(Ladder, BisectionOrderIsAPermutationForEveryLength) {
  for (int64_t L = 1; L <= 64; ++L) {
    std::vector<int64_t> order = bisectionOrder(L);
    std::sort(order.begin(), order.end());
    std::vector<int64_t> ids(L);
    std::iota(ids.begin(), ids.end(), 0);
    EXPECT_EQ(order, ids) << "L=" << L;
  }
}

TEST(Ladder, KeptBlocksAreSortedAndNested) {
  const std::vector<int64_t> order = bisectionOrder(20);
  EXPECT_EQ(keptBlocks(order, 2), (std::vector<int64_t>{0, 19}));
  EXPECT_EQ(keptBlocks(order, 8), (std::vector<int64_t>{0, 4, 6, 9, 11, 14, 16, 19}));
  for (int64_t d = 2; d < 20; ++d) {
    const auto small = keptBlocks(order, d), large = keptBlocks(order, d + 1);
    EXPECT_TRUE(std::includes(large.begin(), large.end(), small.begin(), small.end()));
  }
}

TEST(Ladder, RebisectingASliceChoosesOtherBlocks) {
  // model.md: a 16-block slice keeps its parent's order; re-running bisection on it would pick
  // other blocks at 13 of its 14 depths (2..15).
  const std::vector<int64_t> parent = bisectionOrder(20), kept = keptBlocks(parent, 16);
  std::vector<int64_t> inherited;
  for (int64_t id : parent)
    if (std::binary_search(kept.begin(), kept.end(), id))
      inherited.push_back(std::lower_bound(kept.begin(), kept.end(), id) - kept.begin());
  const std::vector<int64_t> rebisected = bisectionOrder(16);
  int differing = 0;
  for (int64_t d = 2; d < 16; ++d)
    differing += keptBlocks(inherited, d) != keptBlocks(rebisected, d);
  EXPECT_EQ(differing, 13);
}

TEST(Ladder, DepthValidation) {
  EXPECT_NO_THROW(validateDepth(2, 20, "m"));
  EXPECT_NO_THROW(validateDepth(20, 20, "m"));
  EXPECT_NO_THROW(validateDepth(1, 1, "m")); // the whole model is always a depth
  for (int64_t bad : {-1, 0, 1, 21}) {
    try {
      validateDepth(bad, 20, "m");
      ADD_FAILURE() << bad;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("m: --layers: depth " + std::to_string(bad) + " is outside 2..20"),
                std::string::npos);
    }
  }
}

TEST(Ladder, DepthProblemIsTheOneRuleBothSlicersReport) {
  EXPECT_EQ(depthProblem(2, 20), std::nullopt);
  EXPECT_EQ(depthProblem(20, 20), std::nullopt);
  EXPECT_EQ(depthProblem(1, 1), std::nullopt);
  EXPECT_EQ(depthProblem(21, 20), "depth 21 is outside 2..20");
  EXPECT_EQ(depthProblem(0, 20), "depth 0 is outside 2..20");
  EXPECT_EQ(depthProblem(2, 1), "the model has 1 block, a ladder needs at least 2");
}

TEST(Permutation, MatchesNumpyLegacyRandomState) {
  // First values of numpy.random.RandomState(11 / 13).permutation(1024), from model.md.
  const auto p1 = numpyLegacyPermutation(11, 1024), p2 = numpyLegacyPermutation(13, 1024);
  EXPECT_EQ(std::vector<int32_t>(p1.begin(), p1.begin() + 5), (std::vector<int32_t>{177, 777, 1006, 410, 709}));
  EXPECT_EQ(std::vector<int32_t>(p2.begin(), p2.begin() + 5), (std::vector<int32_t>{1013, 559, 1010, 70, 681}));
}

} // namespace
