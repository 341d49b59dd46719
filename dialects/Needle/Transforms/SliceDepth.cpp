// needle-slice-depth: the IR version of ladder slicing (Passes.td).
#include "Model/Ladder.h"
#include "Model/Layout.h"
#include "Needle/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace needle {
#define GEN_PASS_DEF_SLICEDEPTH
#include "Needle/Transforms/Passes.h.inc"
} // namespace needle

using namespace mlir;
using namespace needle::ir;

namespace {

/// Removes the cells of dropped blocks from a head.
void dropCells(HeadOp head, const llvm::DenseSet<Operation *> &dropped) {
  SmallVector<Value> cells;
  for (Value cell : head.getCells())
    if (!dropped.contains(cell.getDefiningOp()))
      cells.push_back(cell);
  head.getCellsMutable().assign(cells);
}

/// Keeps only the head rows of kept source blocks (x0's row always stays).
void dropHeadRows(WeightOp weight, const llvm::DenseSet<int64_t> &keptSources) {
  SmallVector<int64_t> rows;
  for (int64_t source : weight.getRowsAttr().asArrayRef())
    if (keptSources.contains(source))
      rows.push_back(source);
  auto type = cast<RankedTensorType>(weight.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[needle::headRowAxis(weight.getName())] = static_cast<int64_t>(rows.size()) + 1;
  weight.setRowsAttr(DenseI64ArrayAttr::get(weight.getContext(), rows));
  weight.getResult().setType(RankedTensorType::get(shape, type.getElementType()));
}

struct SliceDepthPass : needle::impl::SliceDepthBase<SliceDepthPass> {
  using SliceDepthBase::SliceDepthBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Module-level errors go to the module's location without the op: emitting them on the
    // module would attach the whole module as a note.
    auto orderAttr = module->getAttrOfType<DenseI64ArrayAttr>(kLadderOrderAttr);
    if (!orderAttr) {
      mlir::emitError(module.getLoc(), "needle-slice-depth: the module has no ") << kLadderOrderAttr;
      return signalPassFailure();
    }
    const std::vector<int64_t> order(orderAttr.asArrayRef().begin(), orderAttr.asArrayRef().end());
    const int64_t layers = static_cast<int64_t>(order.size());
    int64_t blockCount = 0;
    module.walk([&](BlockOp) { ++blockCount; });
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < layers; ++i)
      if (sorted[i] != i || layers != blockCount) {
        mlir::emitError(module.getLoc(), "needle-slice-depth: ")
            << kLadderOrderAttr << " must be a permutation of the " << blockCount << " block ids";
        return signalPassFailure();
      }
    if (std::optional<std::string> problem = needle::depthProblem(depth, layers)) {
      mlir::emitError(module.getLoc(), "needle-slice-depth: ") << *problem;
      return signalPassFailure();
    }
    const std::vector<int64_t> kept = needle::keptBlocks(order, depth);
    std::vector<int64_t> newIndex(layers, -1);
    for (size_t i = 0; i < kept.size(); ++i)
      newIndex[kept[i]] = static_cast<int64_t>(i);

    llvm::DenseSet<Operation *> dropped;
    SmallVector<BlockOp> blocks;
    const WalkResult walk = module.walk([&](BlockOp block) {
      if (static_cast<int64_t>(block.getId()) >= layers) {
        block.emitOpError("id ") << block.getId() << " is outside the ladder order of " << layers << " blocks";
        return WalkResult::interrupt();
      }
      blocks.push_back(block);
      if (newIndex[block.getId()] < 0)
        dropped.insert(block);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    llvm::DenseSet<int64_t> keptSources;
    for (BlockOp block : blocks)
      if (!dropped.contains(block))
        keptSources.insert(static_cast<int64_t>(block.getSource()));
    module.walk([&](HeadOp head) { dropCells(head, dropped); });
    module.walk([&](WeightOp weight) {
      if (weight.getRows())
        dropHeadRows(weight, keptSources);
    });

    OpBuilder b(module.getContext());
    int64_t site = 0;
    for (BlockOp block : blocks) {
      if (dropped.contains(block)) {
        block.getResult().replaceAllUsesWith(block.getLanes());
        block.erase();
        continue;
      }
      const int64_t id = newIndex[block.getId()];
      block.setId(id);
      block.walk([&](MhcGatesOp gates) { gates.setPosition(id); });
      if (block.getEngramSite())
        block.setEngramSite(site++);
    }
    SmallVector<int64_t> sliced;
    for (int64_t id : order)
      if (newIndex[id] >= 0)
        sliced.push_back(newIndex[id]);
    module->setAttr(kLadderOrderAttr, b.getDenseI64ArrayAttr(sliced));
  }
};

} // namespace
