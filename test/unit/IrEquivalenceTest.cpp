// The IR, evaluated before and after each pass and the whole pipeline, computes what the
// reference interpreter computes, at several depths of a 20-block model.
#include "Evaluate/Evaluator.h"
#include "Import/Importer.h"
#include "Model/ModelFiles.h"
#include "Needle/Transforms/Passes.h"
#include "Pipeline/Pipeline.h"
#include "Reference/Interpreter.h"
#include "Support/Error.h"
#include "TestModels.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace needle;

namespace {

const std::vector<int32_t> kTokens = {5, 17, 200, 0, 33, 33, 33, 9, 0, 140, 12, 77, 5, 17, 200, 61};

float maxRelative(const reference::Vec &a, const reference::Vec &b) {
  float scale = 1e-30f, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  return diff / scale;
}

class IrEquivalence : public ::testing::Test {
protected:
  void SetUp() override {
    model_ = test::tinyModel(/*twentyBlocks=*/true);
    // One directory per test: ctest runs the tests of this binary in parallel processes.
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = test::scratchDir("ir-" + name) / "m.needle";
    writeNeedleModel(model_, path_);
    loadNeedleDialects(context_);
  }

  /// Imports the model, runs `passes`, evaluates, and compares with the reference at `depth`.
  void expectEquivalent(int64_t depth, const std::function<void(mlir::PassManager &)> &passes, const char *what) {
    mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context_, model_, path_.string());
    mlir::PassManager pm(&context_);
    passes(pm);
    ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << what;
    IrEvaluator evaluator(*module, model_);
    evaluator.feed(kTokens);
    const reference::Outputs ir = evaluator.outputs();
    const reference::Weights weights(model_, depth);
    const reference::Outputs ref = reference::runSequence(weights, kTokens);
    EXPECT_LE(maxRelative(ir.logits, ref.logits), 1e-4f) << what << " at depth " << depth;
    EXPECT_LE(maxRelative(ir.embedding, ref.embedding), 1e-4f) << what << " at depth " << depth;
    EXPECT_NEAR(ir.confidence, ref.confidence, 1e-4f) << what << " at depth " << depth;
  }

  Model model_;
  std::filesystem::path path_;
  mlir::MLIRContext context_;
};

TEST_F(IrEquivalence, BeforeAndAfterEveryPassAtSeveralDepths) {
  for (int64_t depth : {2, 5, 8, 13, 20}) {
    auto slice = [depth](mlir::PassManager &pm) { pm.addPass(createSliceDepth(SliceDepthOptions{depth})); };
    expectEquivalent(depth, slice, "slice");
    expectEquivalent(depth, [&](mlir::PassManager &pm) { slice(pm), pm.addPass(createFoldHadamard()); }, "fold");
    expectEquivalent(depth, [&](mlir::PassManager &pm) { slice(pm), pm.addPass(createFuseCqMatmul()); }, "fuse");
    expectEquivalent(depth, [&](mlir::PassManager &pm) { buildDefaultPipeline(pm, depth); }, "pipeline");
  }
  expectEquivalent(20, [](mlir::PassManager &) {}, "import");
}

TEST_F(IrEquivalence, PipelineLeavesNoFloatWeightAndFewerRotations) {
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context_, model_, path_.string());
  const int64_t before = countOnlineRotations(*module);
  mlir::PassManager pm(&context_);
  buildDefaultPipeline(pm, 0);
  ASSERT_TRUE(mlir::succeeded(pm.run(*module)));
  EXPECT_EQ(countDequantizedWeights(*module), 0);
  // Tiny's engram rows are 64 wide (padded to 128), so their decode rotation cannot cancel:
  // per block 8 -> 3, per site 3 -> 2, plus the embedding decode and the logits.
  EXPECT_EQ(before, 20 * 8 + 5 * 3 + 2);
  EXPECT_EQ(countOnlineRotations(*module), 20 * 3 + 5 * 2 + 2);
}

TEST_F(IrEquivalence, IncrementalFeedingMatchesOneFeed) {
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context_, model_, path_.string());
  IrEvaluator whole(*module, model_), pieces(*module, model_);
  whole.feed(kTokens);
  pieces.feed(std::span(kTokens).first(5));
  pieces.feed(std::span(kTokens).subspan(5));
  EXPECT_EQ(whole.outputs().logits, pieces.outputs().logits);
  const std::vector<int32_t> bad = {3, 999};
  EXPECT_THROW(pieces.feed(bad), Error);
  EXPECT_EQ(pieces.outputs().logits, whole.outputs().logits);
}

} // namespace
