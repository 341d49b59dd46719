// needle-fuse-cq-matmul: matmul(cq_dequant(w), x) -> cq_matmul(w, x) (Passes.td).
#include "Needle/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace needle {
#define GEN_PASS_DEF_FUSECQMATMUL
#include "Needle/Transforms/Passes.h.inc"
} // namespace needle

using namespace mlir;
using namespace needle::ir;

namespace {

struct FuseDequantIntoMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    auto dequant = op.getMatrix().getDefiningOp<CqDequantOp>();
    // cq_matmul takes CQ matrices; a dequantized table of higher rank stays as it is.
    if (!dequant || dequant.getWeight().getType().getShape().size() != 2)
      return failure();
    rewriter.replaceOpWithNewOp<CqMatmulOp>(op, op.getType(), dequant.getWeight(), op.getInput());
    return success();
  }
};

struct FuseCqMatmulPass : needle::impl::FuseCqMatmulBase<FuseCqMatmulPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseDequantIntoMatmul>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
