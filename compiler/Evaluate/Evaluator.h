// Runs needle-dialect IR one token at a time with the reference kernels, so a pass is checked by
// the numbers it produces, not only by its text. Works on IR before or after any pass.
#pragma once

#include "Model/Model.h"
#include "Reference/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <filesystem>
#include <memory>
#include <span>

namespace needle {

/// The model file a module names (needle.model), resolved against `irDirectory`.
std::filesystem::path moduleWeightsPath(mlir::ModuleOp module, const std::filesystem::path &irDirectory);

class IrEvaluator {
public:
  /// `weights` is the model file the module names; it must outlive the evaluator.
  IrEvaluator(mlir::ModuleOp module, const Model &weights);
  ~IrEvaluator();

  /// Appends tokens; a bad token or a full session throws and leaves the state unchanged.
  void feed(std::span<const int32_t> tokens);
  reference::Outputs outputs() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace needle
