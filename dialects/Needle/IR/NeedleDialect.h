// The needle dialect: types and ops of the SAN ladder graph (NeedleOps.td).
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Needle/IR/NeedleOpsDialect.h.inc"

#include "Needle/IR/NeedleEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Needle/IR/NeedleAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Needle/IR/NeedleOpsTypes.h.inc"

namespace needle::ir {

/// Fails when an operand or result type of `op` has more elements than a tensor may have.
mlir::LogicalResult verifyBoundedTensors(mlir::Operation *op);

template <typename ConcreteType> class BoundedTensors : public mlir::OpTrait::TraitBase<ConcreteType, BoundedTensors> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) { return verifyBoundedTensors(op); }
};

} // namespace needle::ir

#define GET_OP_CLASSES
#include "Needle/IR/NeedleOps.h.inc"

namespace needle::ir {

/// Module attribute names.
inline constexpr const char *kModelAttr = "needle.model";              // the model file
inline constexpr const char *kCodebooksAttr = "needle.codebooks";      // {cq2 = array<f32: ...>, ...}
inline constexpr const char *kLadderOrderAttr = "needle.ladder_order"; // the ladder order of the blocks
inline constexpr const char *kMaxSeqLenAttr = "needle.max_seq_len";    // tokens a session holds
inline constexpr const char *kMaxRollbackAttr = "needle.max_rollback"; // tokens a session can take back (absent: 0)
inline constexpr const char *kArenaAttr = "needle.arena"; // the session plan: {align, size, state_end, outputs_end}

/// The shape of a value of ranked tensor type: every needle op's operands and results are.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType()).getShape();
}

/// The first dimension of a value of ranked tensor type: a vector's length.
inline int64_t lengthOf(mlir::Value value) { return shapeOf(value)[0]; }

} // namespace needle::ir
