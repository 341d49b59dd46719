// Model file -> needle dialect IR: one decode step of the model as func.func @step.
#pragma once

#include "Model/Model.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace needle {

/// Imports every block of `model` (a prepared model: LoRA merged, CQ tensors quantized).
/// `weightsPath` is the model file the IR names in its `needle.model` attribute; it must hold
/// exactly `model`'s tensors.
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context, const Model &model,
                                              const std::string &weightsPath);

/// Registers what the importer and the evaluator need in a context.
void loadNeedleDialects(mlir::MLIRContext &context);

} // namespace needle
