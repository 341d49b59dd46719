// The C++ printer: a KernelProgram becomes one standalone C++17 source and the C header of
// docs/c-interface.md.
#pragma once

#include "codegen/Lower/KernelProgram.h"
#include "codegen/Select/WeightLayouts.h"

#include <string>

namespace needle {

struct CppModel {
  std::string header; // OUT.h: C99, <stddef.h> and <stdint.h> only
  std::string source; // OUT.cpp: the runtime, the weights, @step and the C interface
};

/// Prints `program`, its CQ2 matrices in the CqLut16 layout and its CQ4 ones in CqX8 (with
/// Activations::Int8, CqLut16 for CQ2 and for CQ4 of kFastCq4Rows). `name` prefixes every exported
/// symbol; `headerName` is what the source #includes.
CppModel emitCpp(KernelProgram program, const std::string &name, const std::string &headerName,
                 Activations activations = Activations::Float);

/// The C header of a model named `name` (with the text and call functions when `program` has a
/// tokenizer and tools): the same for every backend.
std::string emitHeader(const std::string &name, const KernelProgram &program);

} // namespace needle
