// needlec's passes (Passes.td) and the default pipeline.
#pragma once

#include "Needle/IR/NeedleDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace needle {

#define GEN_PASS_DECL
#include "Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Transforms/Passes.h.inc"

/// Online Hadamard rotations executed per token: needle.hadamard ops whose input is not a
/// constant.
int64_t countOnlineRotations(mlir::ModuleOp module);

/// Float weight matrices the module materializes: needle.cq_dequant ops.
int64_t countDequantizedWeights(mlir::ModuleOp module);

/// import -> [slice to `depth`] -> fold Hadamard -> fuse CQ matmuls -> canonicalize -> CSE.
void buildDefaultPipeline(mlir::OpPassManager &pm, int64_t depth);

} // namespace needle
