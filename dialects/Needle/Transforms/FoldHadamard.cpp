// needle-fold-hadamard: removes the online rotations algebra allows (Passes.td).
#include "Needle/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace needle {
#define GEN_PASS_DEF_FOLDHADAMARD
#include "Needle/Transforms/Passes.h.inc"
} // namespace needle

using namespace mlir;
using namespace needle::ir;

namespace {

/// One rotation per (value, group) in each block: later ones reuse the first, which dominates
/// them because the block's regions are single-block and ops run in order. This is CSE
/// restricted to needle.hadamard, done by hand on purpose: the pass changes rotations and
/// nothing else, so its effect (and its lit test) is exactly the sharing, cancelling and
/// constant folding of rotations; CSE of everything is the pipeline's last step.
void shareRotations(Block &block) {
  llvm::DenseMap<std::pair<Value, int64_t>, HadamardOp> first;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto rotation = dyn_cast<HadamardOp>(op);
    if (!rotation)
      continue;
    auto [it, inserted] = first.try_emplace({rotation.getInput(), rotation.getGroup()}, rotation);
    if (!inserted) {
      rotation.replaceAllUsesWith(it->second.getResult());
      rotation.erase();
    }
  }
}

struct FoldHadamardPass : needle::impl::FoldHadamardBase<FoldHadamardPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module.walk([](Block *block) { shareRotations(*block); });
    // H·H = I and rotations of constants are HadamardOp's folder; the driver also erases the
    // rotations (and decodes) that no longer have users.
    if (failed(applyPatternsAndFoldGreedily(module, RewritePatternSet(&getContext()))))
      return signalPassFailure();
  }
};

} // namespace
