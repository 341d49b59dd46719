// The one stage that chooses kernels: every call of a KernelProgram, as the lowering left it
// (the runtime's portable kernels on the file's weights), is pointed at the kernel the printer's
// target runs best, and its CQ weights are re-laid for that kernel. The choice is by the
// printer, the instruction sets the target's CPU has, the call's op and shape, and the mode;
// the kernels come from the registry (runtime/needle_kernels.def). The printers only print.
// Plain C++, no MLIR.
#pragma once

#include "codegen/Lower/KernelProgram.h"
#include "codegen/Select/WeightLayouts.h"

namespace needle {

/// Which backend the program is for. The C++ backend's CPU is unknown until the product compiles
/// the source, so it calls dispatchers that choose by #if; the object's is known.
enum class Backend { Cpp, Object };

/// The instruction sets of the object's CPU that the runtime has kernels for (all false for
/// --kernels portable, or where the CPU has none of them).
struct TargetIsas {
  bool avx2 = false;       // x86-64 with AVX2, FMA and F16C
  bool avx512 = false;     // AVX-512F besides
  bool avx512Vnni = false; // AVX-512 BW, VBMI and VNNI besides
  bool simd128 = false;    // wasm simd128
  bool neon = false;       // aarch64 NEON (every aarch64 CPU)
};

struct Selection {
  Backend backend = Backend::Object;
  TargetIsas isas;
  Activations activations = Activations::Float;
};

/// Chooses every call's kernel and re-lays the CQ weights the chosen kernels read. Calls the
/// runtime has no better kernel for keep the portable one (the object printer may still serve
/// them with Halide's, codegen/Object/HalideKernels.h).
void selectKernels(KernelProgram &program, const Selection &selection);

} // namespace needle
