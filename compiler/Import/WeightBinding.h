// Binds the IR's needle.weight ops to the tensors of the model file they name: the evaluator
// reads them as floats, the code generators copy their stored bytes. One resolution, checked
// once per op against the file (a weight whose IR type the file does not hold is an error).
#pragma once

#include "Model/Model.h"
#include "Needle/IR/NeedleDialect.h"

#include "llvm/ADT/DenseSet.h"

#include <string>
#include <vector>

namespace needle {

class WeightBinding {
public:
  /// `model` is the file the module names; it must outlive the binding.
  explicit WeightBinding(const Model &model);

  /// The file tensor's name: the leaf, under its source block for block and engram weights.
  std::string tensorName(ir::WeightOp op) const;
  /// The file tensor behind `op`, after checking the IR's type against it.
  const Tensor &tensor(ir::WeightOp op);
  /// Float values: the whole tensor, or for a head tensor (`rows`) the head rows of x0 and of
  /// each listed source block, in that order.
  std::vector<float> floats(ir::WeightOp op);
  /// An int32 permutation (mlp.p1 / mlp.p2): the file's, or Needle's default draw.
  std::vector<int32_t> ints(ir::WeightOp op);

private:
  const Model &model_;
  std::vector<int64_t> sources_;
  llvm::DenseSet<mlir::Operation *> checked_;
};

} // namespace needle
