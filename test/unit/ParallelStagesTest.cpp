// Parallel stages (codegen/Select/ParallelStages.h): how a CQ product is cut into panels of rows,
// which products share a stage, that a matrix another call reads is cut from a copy and that a
// gathered one is gathered from its panels, on programs written by hand.
#include "codegen/Select/ParallelStages.h"

#include "codegen/Select/KernelRegistry.h"
#include "runtime/needle_contract.h"

#include <gtest/gtest.h>

#include <numeric>

namespace needle {
namespace {

using Kind = StepStage::Kind;

constexpr int64_t kOutputsEnd = 1 << 20, kStride = 1 << 16; // the arena's scratch, per token

/// cq_matmul(packed, norms, codebook, 2, rows, cols, x, y, stride, n) on weights at `packed` and
/// `norms` and arena offsets x and y.
KernelCall product(int64_t rows, int64_t cols, int64_t x, int64_t y, int64_t packed = 0, int64_t norms = 0) {
  return {"cq_matmul",
          {KernelArg::weight(packed, "uint8_t"), KernelArg::weight(norms, "uint16_t"),
           KernelArg::of(KernelArg::Kind::Codebook, 2), KernelArg::i32(2), KernelArg::i64(rows), KernelArg::i64(cols),
           KernelArg::arena(x), KernelArg::arena(y), KernelArg::i64(kStride / 4),
           KernelArg::of(KernelArg::Kind::Count)},
          {}};
}

KernelProgram program(std::vector<StepStage> stages, int64_t weightBytes = 1 << 20) {
  KernelProgram p;
  p.rungs[0].step = std::move(stages);
  p.rungs[0].facts.outputsEnd = kOutputsEnd;
  p.rungs[0].facts.tokenStride = kStride;
  p.rungs[0].facts.batch = 16;
  p.weights.assign(static_cast<size_t>(weightBytes), 0);
  std::iota(p.weights.begin(), p.weights.end(), uint8_t{0});
  return p;
}

TEST(ParallelStages, PanelsAreWholeMultiplesOf64AndCoverTheRows) {
  EXPECT_EQ(panelRows(511), (std::vector<int64_t>{511}));
  EXPECT_EQ(panelRows(512), (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(panelRows(576), (std::vector<int64_t>{320, 256}));
  EXPECT_EQ(panelRows(768), (std::vector<int64_t>{256, 256, 256}));
  EXPECT_EQ(panelRows(8192), std::vector<int64_t>(8, 1024));
  for (int64_t rows = 1; rows <= 20000; rows += 97) {
    const std::vector<int64_t> panels = panelRows(rows);
    EXPECT_EQ(std::accumulate(panels.begin(), panels.end(), int64_t{0}), rows);
    EXPECT_LE(static_cast<int64_t>(panels.size()), kMostPanels);
    for (size_t i = 0; i + 1 < panels.size(); ++i)
      EXPECT_EQ(panels[i] % kPanelMultiple, 0) << rows;
  }
}

TEST(ParallelStages, APanelIsTheMatrixRowsItCovers) {
  KernelProgram p = program({{Kind::Batched, {product(768, 512, kOutputsEnd, kOutputsEnd + 4096, 0, 65536)}}});
  planParallelStages(p);
  ASSERT_EQ(p.rungs[0].step.size(), 1u);
  ASSERT_TRUE(p.rungs[0].step[0].parallel);
  ASSERT_EQ(p.rungs[0].step[0].calls.size(), 3u);
  const int64_t rowBytes = 2 * 512 / 8, rowNorms = 4 * 2;
  for (int64_t i = 0; i < 3; ++i) {
    const KernelCall &panel = p.rungs[0].step[0].calls[static_cast<size_t>(i)];
    EXPECT_EQ(argValue(panel, "rows"), 256);
    EXPECT_EQ(argValue(panel, "packed"), i * 256 * rowBytes);
    EXPECT_EQ(argValue(panel, "norms"), 65536 + i * 256 * rowNorms);
    EXPECT_EQ(argValue(panel, "y"), kOutputsEnd + 4096 + i * 256 * 4);
    EXPECT_EQ(argValue(panel, "x_rot"), kOutputsEnd);
  }
}

TEST(ParallelStages, ProductsOfOneInputShareAStageAndADependentOneDoesNot) {
  const int64_t x = kOutputsEnd, q = x + 4096, k = q + 4096, z = k + 4096;
  KernelProgram p = program({{Kind::Batched, {product(512, 512, x, q)}},
                             {Kind::Batched, {product(128, 512, x, k)}},
                             {Kind::Batched, {product(512, 512, k, z)}}}); // reads what the second wrote
  planParallelStages(p);
  ASSERT_EQ(p.rungs[0].step.size(), 2u);
  EXPECT_EQ(p.rungs[0].step[0].calls.size(), 3u); // two panels and the small product
  EXPECT_EQ(p.rungs[0].step[1].calls.size(), 2u);
  EXPECT_TRUE(p.rungs[0].step[0].parallel && p.rungs[0].step[1].parallel);
}

TEST(ParallelStages, AnotherTokensCopyCountsAsTheSameBuffer) {
  // The first's y runs past token 0's scratch into token 1's, where the second reads token 1's x.
  const int64_t e = kOutputsEnd;
  KernelProgram p = program({{Kind::Batched, {product(512, 512, e + 8192, e + kStride - 1024)}},
                             {Kind::Batched, {product(512, 512, e, e + 16384)}}});
  planParallelStages(p);
  EXPECT_EQ(p.rungs[0].step.size(), 2u);
}

TEST(ParallelStages, SmallWorkStaysOnTheCallingThread) {
  KernelProgram p = program({{Kind::Batched, {product(128, 128, kOutputsEnd, kOutputsEnd + 4096)}},
                             {Kind::Batched, {product(128, 128, kOutputsEnd, kOutputsEnd + 8192)}}});
  planParallelStages(p);
  ASSERT_EQ(p.rungs[0].step.size(), 1u);
  EXPECT_EQ(p.rungs[0].step[0].calls.size(), 2u);
  EXPECT_FALSE(p.rungs[0].step[0].parallel);
}

TEST(ParallelStages, TheLastTokensOtherCallsStayInOrderAroundTheProduct) {
  KernelCall norm{
      "scale",
      {KernelArg::arena(kOutputsEnd), KernelArg::i64(512), KernelArg::f32(1), KernelArg::arena(kOutputsEnd)},
      {}};
  KernelProgram p = program({{Kind::LastToken, {norm, product(2048, 512, kOutputsEnd, 0), norm}}});
  planParallelStages(p);
  ASSERT_EQ(p.rungs[0].step.size(), 3u);
  EXPECT_FALSE(p.rungs[0].step[0].parallel);
  EXPECT_TRUE(p.rungs[0].step[1].parallel);
  EXPECT_EQ(p.rungs[0].step[1].calls.size(), 8u);
  EXPECT_FALSE(p.rungs[0].step[2].parallel);
  for (const StepStage &stage : p.rungs[0].step)
    EXPECT_EQ(stage.kind, Kind::LastToken);
}

TEST(ParallelStages, AGatheredMatrixIsCutInPlaceAndItsRowsGatheredFromThePanels) {
  // The tied embedding: a row gather reads the matrix the logits multiply by. The panels take the
  // matrix's own bytes, and the gather reads its rows from them (each in the file's layout until a
  // layout re-lays it).
  const KernelCall gather{"cq_row",
                          {KernelArg::weight(0, "uint8_t"), KernelArg::weight(65536, "uint16_t"),
                           KernelArg::of(KernelArg::Kind::Codebook, 2), KernelArg::i32(2),
                           KernelArg::of(KernelArg::Kind::Token), KernelArg::i64(256), KernelArg::arena(kOutputsEnd)},
                          {}};
  KernelProgram p =
      program({{Kind::EachToken, {gather}}, {Kind::LastToken, {product(768, 256, kOutputsEnd, 0, 0, 65536)}}});
  const size_t weights = p.weights.size();
  planParallelStages(p);
  EXPECT_EQ(p.weights.size(), weights); // no copy
  ASSERT_EQ(p.rungs[0].step.size(), 2u);
  const KernelCall &rows = p.rungs[0].step[0].calls.at(0);
  ASSERT_EQ(rows.kernel, "cq_row_panels");
  const std::vector<KernelCall> &panels = p.rungs[0].step[1].calls;
  ASSERT_EQ(panels.size(), 3u);
  ASSERT_EQ(argument(rows, "packed").pointers.size(), 3u);
  ASSERT_EQ(argument(rows, "norms").pointers.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(argValue(panels[k], "packed"), static_cast<int64_t>(k) * 256 * 64);
    EXPECT_EQ(argValue(panels[k], "norms"), 65536 + static_cast<int64_t>(k) * 256 * 4);
    EXPECT_EQ(argument(rows, "packed").pointers[k].value, argValue(panels[k], "packed"));
    EXPECT_EQ(argument(rows, "norms").pointers[k].value, argValue(panels[k], "norms"));
  }
  const std::vector<int64_t> layouts = {256, needle_rt::cq_panel_file, 0, 256, needle_rt::cq_panel_file, 0,
                                        256, needle_rt::cq_panel_file, 0};
  EXPECT_EQ(argument(rows, "panels").ints, layouts);
  EXPECT_EQ(argValue(rows, "count"), 3);
  EXPECT_EQ(argValue(rows, "cols"), 256);
  EXPECT_EQ(argument(rows, "row").kind, KernelArg::Kind::Token);
  EXPECT_EQ(argValue(rows, "out"), kOutputsEnd);
}

TEST(ParallelStages, AMatrixAnotherCallReadsIsCutFromACopy) {
  // A call that reads the matrix's bytes otherwise (here as floats) keeps the original.
  const KernelCall floats{
      "gather_row", {KernelArg::weight(0), KernelArg::i64(64), KernelArg::i64(3), KernelArg::arena(kOutputsEnd)}, {}};
  KernelProgram p =
      program({{Kind::EachToken, {floats}}, {Kind::LastToken, {product(768, 256, kOutputsEnd, 0, 0, 65536)}}});
  const std::vector<uint8_t> before = p.weights;
  planParallelStages(p);
  ASSERT_EQ(p.rungs[0].step.size(), 2u);
  const KernelCall &first = p.rungs[0].step[1].calls.at(0);
  const int64_t packed = argValue(first, "packed"), norms = argValue(first, "norms");
  EXPECT_GE(packed, static_cast<int64_t>(before.size()));
  EXPECT_EQ(packed % kWeightAlign, 0);
  EXPECT_TRUE(std::equal(before.begin(), before.begin() + 768 * 64, p.weights.begin() + packed));
  EXPECT_TRUE(std::equal(before.begin() + 65536, before.begin() + 65536 + 768 * 4, p.weights.begin() + norms));
  EXPECT_EQ(p.rungs[0].step[0].calls[0].args[0].value, 0); // the other call reads the original
}

KernelCall perToken(std::string kernel, std::vector<int64_t> arena) {
  KernelCall call{std::move(kernel), {}, {}};
  for (int64_t offset : arena)
    call.args.push_back(KernelArg::arena(offset));
  return call;
}

TEST(ParallelStages, ALoopOverTokensOfTheirScratchOnlyRunsTokensAsTasks) {
  const int64_t e = kOutputsEnd;
  KernelProgram p =
      program({{Kind::EachToken, {perToken("kron_mlp_flat", {e, e + 4096})}},
               {Kind::EachToken, {perToken("kron_mlp_flat", {e, 64})}}, // state: in token order
               {Kind::EachToken, {perToken("a", {e}), perToken("b", {e}), perToken("c", {e})}},
               {Kind::EachToken, {perToken("a", {e}), perToken("b", {e}), perToken("c", {e}), perToken("d", {e})}}});
  planParallelStages(p);
  ASSERT_EQ(p.rungs[0].step.size(), 4u);
  EXPECT_TRUE(p.rungs[0].step[0].parallel);
  EXPECT_FALSE(p.rungs[0].step[1].parallel);
  EXPECT_FALSE(p.rungs[0].step[2].parallel); // too little work per token
  EXPECT_TRUE(p.rungs[0].step[3].parallel);
  KernelProgram single = program({{Kind::EachToken, {perToken("kron_mlp_flat", {e, e + 4096})}}});
  single.rungs[0].facts.batch = 1; // one token a step: nothing to share out
  planParallelStages(single);
  EXPECT_FALSE(single.rungs[0].step[0].parallel);
}

} // namespace
} // namespace needle
