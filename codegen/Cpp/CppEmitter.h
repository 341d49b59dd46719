// The C++ printer: a planned module (needle-plan-session has run) over its model file becomes
// one standalone C++17 source and the C header of docs/c-interface.md.
#pragma once

#include "Model/Model.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace needle {

struct CppModel {
  std::string header; // OUT.h: C99, <stddef.h> and <stdint.h> only
  std::string source; // OUT.cpp: the runtime, the weights, @step and the C interface
};

/// Prints `module` (planned) with the weights of `model`. `name` prefixes every exported
/// symbol; `headerName` is what the source #includes.
CppModel emitCpp(mlir::ModuleOp module, const Model &model, const std::string &name, const std::string &headerName);

} // namespace needle
