// The object printer: a KernelProgram becomes @step in MLIR's LLVM dialect, LLVM IR, linked with
// the runtime's bitcode for the target's architecture (runtime/needle_object.cpp), optimized and
// compiled by LLVM 19's TargetMachine, in process: one relocatable object (or its assembly, or
// its LLVM IR) implementing docs/c-interface.md.
#pragma once

#include "codegen/Lower/KernelProgram.h"
#include "codegen/Select/WeightLayouts.h"
#include "targets/Targets.h"

#include <string>
#include <vector>

namespace needle {

/// What emitObject returns: the object, its assembly, its LLVM IR, the kernel each call runs
/// (describeKernels, codegen/Object/KernelList.h), or @step in MLIR's LLVM dialect as it is built
/// (StepBuilder.h), before it is translated and linked with the runtime.
enum class ObjectOutput { Object, Assembly, LlvmIr, KernelList, StepMlir };

/// The hot kernels: the target's own (docs/targets.md: the runtime's AVX2 CQ2 and CQ4 kernels on
/// x86-64 with AVX2, FMA and F16C; Halide's, generated for the model's shapes, where Halide serves
/// the target), or the runtime's portable C++ everywhere.
enum class KernelChoice { Native, Portable };

struct ObjectOptions {
  std::string name = "needle_model"; // prefixes every exported symbol
  ObjectOutput output = ObjectOutput::Object;
  KernelChoice kernels = KernelChoice::Native;
  Activations activations = Activations::Float;
};

/// Seconds spent in each phase of emitObject, in order.
struct PhaseTime {
  std::string phase;
  double seconds;
};

/// The object (or assembly, or LLVM IR text) of `program` for `target`. `program` is taken by
/// value: the native kernels re-lay its weights in place. `times`, if given, receives the phase
/// times.
std::string emitObject(KernelProgram program, const TargetSpec &target, const ObjectOptions &options,
                       std::vector<PhaseTime> *times = nullptr);

} // namespace needle
