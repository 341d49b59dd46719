// The pass pipeline needlec runs after import, and the figures it reports about the IR.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace needle {

/// import -> [slice to `depth`] -> fold Hadamard -> fuse CQ matmuls -> canonicalize -> CSE ->
/// plan the session's arena.
void buildDefaultPipeline(mlir::OpPassManager &pm, int64_t depth);

/// Online Hadamard rotations executed per token: needle.hadamard ops whose input is not a
/// constant.
int64_t countOnlineRotations(mlir::ModuleOp module);

/// Float weight matrices the module materializes: needle.cq_dequant ops.
int64_t countDequantizedWeights(mlir::ModuleOp module);

} // namespace needle
