// needlec --emit kernels: the kernel each call of a program runs once the object printer has
// chosen (codegen/Select, then Halide's where it serves the call), one line a call, so tests can
// pin the choice for a target and --mcpu.
#pragma once

#include "codegen/Lower/KernelProgram.h"
#include "codegen/Object/HalideKernels.h"

#include <string>

namespace needle {

/// One line per call, in the step's order, then the heads': where it runs (each-token,
/// last-token, batched, confidence-head, embedding-head), the kernel, its instruction set, the
/// weight layout it reads, and its scalar arguments by name.
std::string describeKernels(const KernelProgram &program, const HalideKernels &halide);

} // namespace needle
