// The needle dialect's passes (Passes.td): declarations, options and registration.
#pragma once

#include "Needle/IR/NeedleDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace needle {

#define GEN_PASS_DECL
#include "Needle/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Needle/Transforms/Passes.h.inc"

} // namespace needle
