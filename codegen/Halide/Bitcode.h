// The Halide module of one kernel, and the bitcode of several: what every kernel generator shares.
#pragma once

#include "codegen/Halide/Kernels.h"

#include "Halide.h"

#include <string>
#include <vector>

namespace needle {

/// `outputs` (a Func or several) for `halideTarget` plus no_runtime, no_asserts and
/// no_bounds_query, as the function `name`.
Halide::Module kernelModule(Halide::Pipeline outputs, const std::vector<Halide::Argument> &arguments,
                            const std::string &halideTarget, const std::string &name);

/// The modules a HalideKernelSet has collected.
struct HalideKernelSet::Modules {
  std::vector<Halide::Module> modules;
};

/// The modules linked into one and compiled to LLVM bitcode (Halide's LLVM 14).
std::string compileToBitcode(const std::vector<Halide::Module> &modules, const std::string &halideTarget);

} // namespace needle
