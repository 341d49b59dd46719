// The object printer: a KernelProgram becomes @step in MLIR's LLVM dialect, LLVM IR, linked with
// the runtime's bitcode for the target's architecture (runtime/needle_object.cpp), optimized and
// compiled by LLVM 19's TargetMachine, in process: one relocatable object (or its assembly, or
// its LLVM IR) implementing docs/c-interface.md.
#pragma once

#include "codegen/Lower/KernelProgram.h"
#include "targets/Targets.h"

#include <string>
#include <vector>

namespace needle {

enum class ObjectOutput { Object, Assembly, LlvmIr };

/// Seconds spent in each phase of emitObject, in order.
struct PhaseTime {
  std::string phase;
  double seconds;
};

/// The object (or assembly, or LLVM IR text) of `program` for `target`; `name` prefixes every
/// exported symbol. `times`, if given, receives the phase times.
std::string emitObject(const KernelProgram &program, const TargetSpec &target, ObjectOutput output,
                       const std::string &name, std::vector<PhaseTime> *times = nullptr);

/// The symbols an object of `name` defines for the program (docs/c-interface.md), sorted.
std::vector<std::string> exportedSymbols(const std::string &name);

} // namespace needle
