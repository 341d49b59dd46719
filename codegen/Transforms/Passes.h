// The code generator's passes (Passes.td).
#pragma once

#include "Needle/IR/NeedleDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace needle {

#define GEN_PASS_DECL
#include "codegen/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Transforms/Passes.h.inc"

} // namespace needle
