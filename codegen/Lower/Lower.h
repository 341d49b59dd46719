// The lowering both backends share: a planned module (needle-plan-session has run) over its
// model file becomes a KernelProgram (codegen/Lower/KernelProgram.h).
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include "Model/Model.h"

#include "mlir/IR/BuiltinOps.h"

namespace needle {

/// Lowers planned `module` over `model`, for up to `batch` tokens per call of the step (the arena
/// holds that many copies of the scratch). `backend` (e.g. "--emit cpp") prefixes every error.
KernelProgram lowerToKernelCalls(mlir::ModuleOp module, const Model &model, const std::string &backend, int64_t batch);

} // namespace needle
