// The default pipeline needlec runs after import.
#include "Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

void needle::buildDefaultPipeline(mlir::OpPassManager &pm, int64_t depth) {
  if (depth > 0)
    pm.addPass(createSliceDepth(SliceDepthOptions{depth}));
  pm.addPass(createFoldHadamard());
  pm.addPass(createFuseCqMatmul());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}
