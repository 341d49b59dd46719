#include "Pipeline/Pipeline.h"

#include "Needle/Transforms/Passes.h"
#include "codegen/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace needle::ir;

void needle::buildDefaultPipeline(OpPassManager &pm, int64_t depth) {
  if (depth > 0)
    pm.addPass(createSliceDepth(SliceDepthOptions{depth}));
  pm.addPass(createFoldHadamard());
  pm.addPass(createFuseCqMatmul());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createPlanSession());
}

int64_t needle::countOnlineRotations(ModuleOp module) {
  int64_t count = 0;
  module.walk([&](HadamardOp op) { count += !matchPattern(op.getInput(), m_Constant()); });
  return count;
}

int64_t needle::countDequantizedWeights(ModuleOp module) {
  int64_t count = 0;
  module.walk([&](CqDequantOp) { ++count; });
  return count;
}
