#include "codegen/Select/Select.h"

#include "codegen/Select/KernelRegistry.h"
#include "codegen/Select/ParallelStages.h"
#include "runtime/needle_contract.h"

namespace needle {

namespace {

std::string nameOf(Kernel kernel) { return std::string(kernelInfo(kernel).name); }

/// Points the calls that an x86 kernel of `isa` serves at it (the same arguments, and the same
/// floats as the portable kernel within its tests): attention whose dv fills whole vectors (of 8
/// floats, 16 with AVX-512), the Hadamard calls whose group does (with AVX-512, groups of 128),
/// the Kronecker MLPs, and (AVX2 only) the lanes' mixing gates and the sigmoid gates.
void useX86Kernels(KernelProgram &program, bool avx512) {
  forEachCall(program, [avx512](KernelCall &call) {
    const bool attention = call.kernel == "attention" && argValue(call, "dv") % 8 == 0;
    const bool hadamard = call.kernel == "hadamard" && argValue(call, "group") % 8 == 0;
    const bool kron = call.kernel == "kron_mlp_flat";
    const bool everyShape = kron || call.kernel == "mhc_gates" || call.kernel == "sigmoid_gate";
    const bool wide = (attention && argValue(call, "dv") % 16 == 0) ||
                      (hadamard && argValue(call, "group") == needle_rt::cq_group) || kron;
    if (avx512 && wide)
      call.kernel = variantOf(call.kernel, KernelIsa::Avx512).name;
    else if (attention || hadamard || everyShape)
      call.kernel = variantOf(call.kernel, KernelIsa::Avx2).name;
  });
}

/// The object's CQ matvecs: the fast mode's first (CQ2, and CQ4 of kFastCq4Rows), then the exact
/// kernels for the rest (and for every CQ matvec of the exact mode).
void selectObjectCq(KernelProgram &program, const Selection &selection) {
  const TargetIsas &isas = selection.isas;
  if (selection.activations == Activations::Int8) {
    // With VNNI, CqLutDword: a row's units in one lane, which vpdpbusd adds. Otherwise CqLut16: the
    // same algorithm on every target, SIMD or not.
    const Kernel fast = isas.avx512Vnni ? Kernel::cq_matmul_dword_fast_avx512vnni
                        : isas.avx2     ? Kernel::cq_matmul_lut16_fast_avx2
                        : isas.simd128  ? Kernel::cq_matmul_lut16_fast_simd128
                                        : Kernel::cq_matmul_lut16_fast;
    useFastCqLayout(program, isas.avx512Vnni ? useCqLutDwordLayout : useCqLut16Layout, nameOf(fast));
  }
  if (isas.avx512) { // 16 lanes: one vpermps holds a CQ4 codebook
    // CqLutDword: a load a byte on, not a widening, brings a row's code to its lane's low bits; CQ2
    // chunk-major, so one chunk's tables serve every tile from registers. Where VBMI and VNNI look
    // them up and add them in fewer operations, the tables in fixed point as byte planes (CQ2 the
    // same sums; CQ4 a token alone on 64 tiles or more, kCq4PlaneTiles). CQ4 in whole tiles only:
    // padded to a tile, the lanes' 4-row mixing projections would quadruple.
    useCqLutChunkMajorLayout(program, nameOf(isas.avx512Vnni ? Kernel::cq_matmul_chunkmajor_exact_avx512vnni
                                                             : Kernel::cq_matmul_chunkmajor_exact_avx512));
    useCqLutDwordLayout(
        program, {4},
        nameOf(isas.avx512Vnni ? Kernel::cq_matmul_dword_exact_avx512vnni : Kernel::cq_matmul_dword_exact_avx512),
        kWholeCqLutTiles);
    useCqX8Layout(program, nameOf(Kernel::cq_matmul_x8_exact_avx512));
  } else if (isas.avx2) {
    useCqLut16Layout(program, {2}, nameOf(Kernel::cq_matmul_lut16_exact_avx2));
    useCqX8Layout(program, nameOf(Kernel::cq_matmul_x8_exact_avx2));
  } else if (isas.neon) {
    // CQ4 in whole tiles on CqLut16 too: 16 rows of a column decoded at once need no sums across
    // lanes (1.1 instructions a weight under qemu against CqX8's 1.7, docs/performance.md).
    useCqLut16Layout(program, {2}, nameOf(Kernel::cq_matmul_lut16_exact_neon));
    useCqLut16Layout(program, {4}, nameOf(Kernel::cq_matmul_lut16_exact_neon), kWholeCqLutTiles);
    useCqX8Layout(program, nameOf(Kernel::cq_matmul_x8_exact_neon));
  }
}

/// The C++ backend's CQ matvecs: CQ2 on CqLut16 and CQ4 on CqX8 (the fast mode's: CqLut16 for CQ2
/// and for CQ4 of kFastCq4Rows; the rest, exact, as the exact mode's), whatever the compiler
/// targets: their kernels pick SIMD code by #if (AVX2; the fast mode's also NEON and simd128) and
/// plain C++ otherwise.
void selectCppCq(KernelProgram &program, const Selection &selection) {
  if (selection.activations == Activations::Int8)
    useFastCqLayout(program, useCqLut16Layout, nameOf(Kernel::cq_matmul_lut16_fast));
  useCqLut16Layout(program, {2}, nameOf(Kernel::cq_matmul_lut16_exact));
  useCqX8Layout(program, nameOf(Kernel::cq_matmul_x8_exact));
}

} // namespace

void selectKernels(KernelProgram &program, const Selection &selection) {
  verifyKernelCalls(program);
  planParallelStages(program);
  if (selection.backend == Backend::Cpp) {
    selectCppCq(program, selection);
    return;
  }
  selectObjectCq(program, selection);
  if (selection.isas.avx2)
    useX86Kernels(program, selection.isas.avx512);
}

} // namespace needle
