#include "codegen/Object/HalideKernels.h"
#include "codegen/Halide/Kernels.h"
#include "codegen/Select/KernelRegistry.h"
#include "codegen/Select/WeightLayouts.h"

#include "Quant/Cq.h"
#include "Support/Error.h"
#include "Support/RoundUp.h"
#include "runtime/needle_contract.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/TargetParser/Triple.h"

#include <fmt/format.h>
#include <set>

namespace needle {

namespace {

using Kind = KernelArg::Kind;

/// The kernel and shape of a call Halide may serve: CQ matvecs by width and bits (a kernel serves
/// any number of rows), the rest by every size they fix.
std::optional<HalideKey> halideKey(const KernelCall &call) {
  if (isCqMatvec(call))
    return HalideKey{"cq_matvec", {argValue(call, "cols"), argValue(call, "bits")}};
  if (call.kernel == "hadamard")
    return HalideKey{call.kernel, {argValue(call, "group")}};
  if (call.kernel == "kron_mlp_flat")
    return HalideKey{call.kernel,
                     {argValue(call, "d_model"), argValue(call, "n"), argValue(call, "ba"), argValue(call, "bb")}};
  if (call.kernel == "attention")
    return HalideKey{
        call.kernel,
        {argValue(call, "heads"), argValue(call, "kv_heads"), argValue(call, "dqk"), argValue(call, "dv")}};
  return std::nullopt;
}

/// Whether a Halide CQ kernel with tiles of `tile` rows can serve `call`: its rows fill whole
/// tiles.
bool fillsTiles(const KernelCall &call, int64_t tile) { return argValue(call, "rows") % tile == 0; }

/// Adds the Halide kernels for one width of CQ matvec to `set` (the batched one too where
/// `batched`).
HalideKernel addCqKernels(HalideKernelSet &set, const HalideKey &key, bool batched, const KernelProgram &program,
                          const HalideChoice &choice) {
  const int64_t cols = key.second[0], bits = key.second[1];
  const std::string suffix = fmt::format("{}_cq{}", cols, bits);
  HalideKernel kernel{"needle_hk_cq_matvec_" + suffix, batched ? "needle_hk_cq_matmul_" + suffix : "", {choice.lanes}};
  const CqMatvecShape cq{cols, static_cast<int>(bits), program.codebooks.at(static_cast<int>(bits))};
  set.addCqMatvec(cq, kernel.name);
  if (batched)
    set.addCqMatmul(cq, kernel.batched);
  return kernel;
}

/// Adds the Halide kernel for one call's kernel and shape to `set`.
HalideKernel addHalideKernel(HalideKernelSet &set, const HalideKey &key, bool batched, const KernelProgram &program,
                             const HalideChoice &choice) {
  if (key.first == "cq_matvec")
    return addCqKernels(set, key, batched, program, choice);
  if (key.first == "hadamard") {
    const int64_t group = key.second[0];
    HalideKernel kernel{fmt::format("needle_hk_hadamard_g{}", group), "", {}};
    set.addHadamard({group}, kernel.name);
    return kernel;
  }
  if (key.first == "kron_mlp_flat") {
    const std::vector<int64_t> &s = key.second; // (d_model, n, ba, bb)
    HalideKernel kernel{fmt::format("needle_hk_kron_mlp_{}_{}x{}", s[0], s[2], s[3]), "", {}};
    set.addKronMlp({s[0], s[1], s[2], s[3]}, kernel.name);
    return kernel;
  }
  const std::vector<int64_t> &s = key.second; // attention's (heads, kv_heads, dqk, dv)
  HalideKernel kernel{fmt::format("needle_hk_attention_h{}x{}_kv{}x{}", s[0], s[2], s[1], s[3]), "", {}};
  set.addAttention({s[0], s[1], s[2], s[3]}, kernel.name);
  return kernel;
}

} // namespace

std::optional<HalideChoice> halideChoice(const TargetSpec &target, const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo &info = *machine.getMCSubtargetInfo();
  auto has = [&](const char *feature) { return info.checkFeatures(std::string("+") + feature); };
  const llvm::Triple triple(target.triple);
  const std::string os = triple.isOSWindows()                        ? "windows"
                         : triple.isiOS()                            ? "ios"
                         : triple.isOSDarwin()                       ? "osx"
                         : triple.isAndroid()                        ? "android"
                         : triple.getOS() == llvm::Triple::UnknownOS ? "noos"
                                                                     : "linux";
  // Two vectors of partial sums per dot product: independent FMAs hide their latency.
  switch (target.arch) {
  case RuntimeArch::X86_64: {
    HalideChoice choice{"x86-64-" + os, 8};
    for (const auto &[llvmName, halideName] :
         {std::pair{"sse4.1", "sse41"}, {"avx", "avx"}, {"avx2", "avx2"}, {"fma", "fma"}, {"f16c", "f16c"}})
      if (has(llvmName))
        choice.target += std::string("-") + halideName;
    if (has("avx"))
      choice.lanes = 16;
    if (has("avx512f") && has("avx512cd") && has("avx512bw") && has("avx512dq") && has("avx512vl")) {
      choice.target += "-avx512-avx512_skylake";
      choice.lanes = 32;
    }
    return choice;
  }
  case RuntimeArch::AArch64:
    return HalideChoice{"arm-64-" + os + (has("dotprod") ? "-arm_dot_prod" : ""), 8};
  case RuntimeArch::Arm:
    if (!has("neon"))
      return std::nullopt;
    return HalideChoice{"arm-32-" + os, 8};
  case RuntimeArch::Wasm32:
    return has("simd128") ? HalideChoice{"wasm-32-wasmrt-wasm_simd128", 8} : HalideChoice{"wasm-32-wasmrt", 4};
  case RuntimeArch::RiscV64:
    return std::nullopt;
  }
  return std::nullopt;
}

const HalideKernel *halideKernelOf(const HalideKernels &kernels, const KernelCall &call) {
  const std::optional<HalideKey> key = halideKey(call);
  const auto it = key ? kernels.find(*key) : kernels.end();
  if (it == kernels.end() || (isCqMatvec(call) && !fillsTiles(call, it->second.bridgeArgs[0])))
    return nullptr;
  return &it->second;
}

HalideKernels linkHalideKernels(llvm::Module &module, const KernelProgram &program, const HalideChoice &choice) {
  HalideKernels kernels;
  HalideKernelSet set(choice.target, choice.lanes);
  std::map<HalideKey, bool> batched; // by shape: whether a batched call has it, in program order
  forEachCall(program, [&](const KernelCall &call) {
    if (const std::optional<HalideKey> key = halideKey(call))
      if (!isCqMatvec(call) || fillsTiles(call, choice.lanes))
        batched[*key] |= call.kernel == "cq_matmul";
  });
  for (const auto &[key, isBatched] : batched)
    kernels.emplace(key, addHalideKernel(set, key, isBatched, program, choice));
  if (set.empty())
    return kernels;
  const std::string bitcode = set.bitcode();
  auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "needle_halide_kernels"), module.getContext());
  if (!parsed)
    fail("internal: Halide's bitcode does not load: {}", llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> linked = std::move(*parsed);
  linked->setTargetTriple(module.getTargetTriple());
  linked->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(linked)))
    fail("internal: the Halide kernels do not link");
  for (const auto &[key, kernel] : kernels)
    for (const std::string &name : {kernel.name, kernel.batched})
      if (!name.empty())
        module.getFunction(name)->addFnAttr(llvm::Attribute::NoInline);
  return kernels;
}

void tileHalideWeights(KernelProgram &program, const HalideKernels &kernels) {
  auto tileOf = [&](const KernelCall &call) { return halideKernelOf(kernels, call)->bridgeArgs[0]; };
  CqRelayout tiled;
  tiled.packed = [&](const KernelCall &call, const uint8_t *packed) {
    const int64_t rowBytes = roundUp(argValue(call, "cols"), cq::kGroup) * argValue(call, "bits") / 8;
    return tileRows(packed, argValue(call, "rows"), rowBytes, 1, tileOf(call));
  };
  tiled.norms = [&](const KernelCall &call, const uint8_t *norms) {
    return tileRows(norms, argValue(call, "rows"), roundUp(argValue(call, "cols"), cq::kGroup) / cq::kGroup, 2,
                    tileOf(call));
  };
  tiled.panel = [&](const KernelCall &call) { return PanelLayout{needle_rt::cq_panel_tiled, tileOf(call)}; };
  relayCqWeights(program, [&](const KernelCall &call) { return halideKernelOf(kernels, call) != nullptr; }, tiled);
}

void checkNoHalideRuntime(const llvm::Module &module) {
  for (const llvm::Function &function : module)
    if (function.isDeclaration() && function.getName().starts_with("halide_") && !function.use_empty())
      fail("internal: a Halide kernel calls {}, a function of Halide's runtime", function.getName().str());
}

} // namespace needle
