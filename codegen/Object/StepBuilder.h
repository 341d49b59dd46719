// @step in MLIR's LLVM dialect: the object printer's view of a KernelProgram.
#pragma once

#include "codegen/Lower/KernelProgram.h"
#include "codegen/Object/HalideKernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/IR/Module.h"

namespace needle {

/// Builds, for each rung of depth D, `void needle_step_D(ptr arena, ptr tokens, i64 n, i64 t)`
/// and its head functions in MLIR's LLVM dialect: each stage of the rung a loop over the n
/// tokens, the last token's calls, or a batched call, and each kernel call an llvm.call of needle_k_<kernel>, declared
/// with the parameter types of the runtime's kernel in `runtime` (ints are sign-extended where a kernel takes int64_t;
/// any other mismatch is an internal error), on GEPs into the arena and into the read-only data it declares
/// (needle_weights, needle_codebook<bits>, needle_constant<i>, needle_list<i>). Calls a Halide kernel serves go through
/// its bridge.
mlir::OwningOpRef<mlir::ModuleOp> buildStep(mlir::MLIRContext &context, const llvm::Module &runtime,
                                            const KernelProgram &program, const HalideKernels &halide);

} // namespace needle
