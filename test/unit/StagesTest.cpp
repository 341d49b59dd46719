// Batched steps (codegen/Lower/Stages.h): which calls loop over the tokens, which run for the last
// token only, which become one batched call, on call lists written by hand.
#include "codegen/Lower/Stages.h"

#include <gtest/gtest.h>

namespace needle {
namespace {

using Mode = StepStage::Kind;

constexpr int64_t kOutputsEnd = 1000, kStride = 256; // arena offsets >= 1000 are per token

StepCall kernel(std::string name, std::vector<int64_t> arena, bool outputsOnly = false) {
  StepCall call{{std::move(name), {}, {}}, outputsOnly};
  for (int64_t offset : arena)
    call.call.args.push_back(KernelArg::arena(offset));
  return call;
}

/// cq_matvec(packed, norms, codebook, bits, rows, cols, x, y).
StepCall matvec(int64_t x, int64_t y, bool outputsOnly = false) {
  return {
      {"cq_matvec",
       {KernelArg::weight(0, "uint8_t"), KernelArg::weight(64, "uint16_t"), KernelArg::of(KernelArg::Kind::Codebook, 2),
        KernelArg::i32(2), KernelArg::i64(4), KernelArg::i64(128), KernelArg::arena(x), KernelArg::arena(y)},
       {}},
      outputsOnly};
}

/// The stages as (mode, kernel names).
std::vector<std::pair<Mode, std::vector<std::string>>> shape(const std::vector<StepStage> &stages) {
  std::vector<std::pair<Mode, std::vector<std::string>>> out;
  for (const StepStage &stage : stages) {
    out.push_back({stage.kind, {}});
    for (const KernelCall &call : stage.calls)
      out.back().second.push_back(call.kernel);
  }
  return out;
}

using Shape = std::vector<std::pair<Mode, std::vector<std::string>>>;

TEST(Stages, MatvecsOnScratchAreBatchedAndOutputsRunOnce) {
  const auto stages = planStages({kernel("a", {64, 1000}), kernel("b", {1000, 1100}), matvec(1100, 1200),
                                  kernel("c", {1200, 1300}), matvec(1300, 900, true), kernel("d", {900}, true)},
                                 kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"a", "b"}},
                                  {Mode::Batched, {"cq_matmul"}},
                                  {Mode::EachToken, {"c"}},
                                  {Mode::LastToken, {"cq_matvec", "d"}}}));
}

TEST(Stages, BatchedCallTakesTheStrideInFloatsAndTheCount) {
  const auto stages = planStages({matvec(1000, 1100)}, kOutputsEnd, kStride, 16);
  ASSERT_EQ(stages.size(), 1u);
  const std::vector<KernelArg> &args = stages[0].calls[0].args;
  ASSERT_EQ(args.size(), 10u);
  EXPECT_EQ(args[6].value, 1000); // token 0's x and y
  EXPECT_EQ(args[7].value, 1100);
  EXPECT_EQ(args[8].kind, KernelArg::Kind::I64);
  EXPECT_EQ(args[8].value, kStride / 4);
  EXPECT_EQ(args[9].kind, KernelArg::Kind::Count);
}

TEST(Stages, StateUsedAcrossAMatvecKeepsOneLoop) {
  // Buffer 64 is state (below outputsEnd): a and c must see it in one-token order.
  const auto stages =
      planStages({kernel("a", {64, 1000}), matvec(1000, 1100), kernel("c", {64, 1100})}, kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"a", "cq_matvec", "c"}}}));
}

TEST(Stages, StateReadLastAfterEveryTokenWroteIt) {
  // The head: pooling for every token, the pooled output for the last one only.
  const auto stages = planStages({kernel("pool", {64, 1000}), matvec(1000, 1100), kernel("finish", {64, 1200}, true)},
                                 kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages),
            (Shape{{Mode::EachToken, {"pool"}}, {Mode::Batched, {"cq_matmul"}}, {Mode::LastToken, {"finish"}}}));
}

TEST(Stages, OutputsOnlyCallBeforeAWriterOfItsStateRunsForEveryToken) {
  const auto stages =
      planStages({kernel("read", {64, 900}, true), kernel("write", {64, 1000})}, kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"read", "write"}}}));
}

TEST(Stages, DemotionsReachAFixedPoint) {
  // Demoting the matvec between a and c for buffer 64 puts b and d in one loop for buffer 80.
  const auto stages = planStages({kernel("b", {80}), matvec(1000, 1100), kernel("a", {64}), matvec(1100, 1200),
                                  kernel("c", {64}), matvec(1200, 1300), kernel("d", {80})},
                                 kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"b", "cq_matvec", "a", "cq_matvec", "c", "cq_matvec", "d"}}}));
}

TEST(Stages, SharedPointersInsideAListCount) {
  StepCall listed = kernel("listed", {});
  KernelArg list = KernelArg::of(KernelArg::Kind::PointerList);
  list.pointers = {KernelArg::arena(1000), KernelArg::arena(64)};
  listed.call.args.push_back(list);
  const auto stages = planStages({kernel("a", {64}), matvec(1000, 1100), listed}, kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"a", "cq_matvec", "listed"}}}));
}

TEST(Stages, MatvecIntoSharedMemoryIsNotBatched) {
  const auto stages = planStages({matvec(1000, 64), kernel("a", {64})}, kOutputsEnd, kStride, 16);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"cq_matvec", "a"}}}));
}

TEST(Stages, ABatchOfOneHasNoBatchedCalls) {
  const auto stages = planStages({kernel("a", {1000}), matvec(1000, 1100)}, kOutputsEnd, kStride, 1);
  EXPECT_EQ(shape(stages), (Shape{{Mode::EachToken, {"a", "cq_matvec"}}}));
}

TEST(Stages, CommentsRideOnTheNextCall) {
  const auto stages = planStages({{{"", {}, "block 0"}, false}, {{"", {}, "more"}, false}, kernel("a", {1000})},
                                 kOutputsEnd, kStride, 16);
  ASSERT_EQ(stages.size(), 1u);
  ASSERT_EQ(stages[0].calls.size(), 1u);
  EXPECT_EQ(stages[0].calls[0].comment, "block 0\nmore");
}

} // namespace
} // namespace needle
