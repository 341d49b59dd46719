// The runtime's kernels as the compiler sees them: runtime/needle_kernels.def, the one list the
// runtime exports from and the compiler chooses from, with each kernel's named parameters, the
// weight layout it reads and the instruction set it needs. Header-only plain C++ (no MLIR, no
// fmt): the weight layouts use it, and tests cross-compile those for every target.
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace needle {

enum class KernelLayout { None, CqLut16, CqLutDword, CqLutChunkMajor, CqX8 };
enum class KernelMode { Exact, Fast };
enum class KernelIsa { Portable, Avx2, Avx512, Avx512Vnni, Simd128, Neon };
enum class KernelBackends { Both, ObjectOnly, CppOnly };

/// Every registered kernel, by its runtime name.
enum class Kernel {
#define NEEDLE_KERNEL(name, signature, layout, mode, isa, backends) name,
#include "runtime/needle_kernels.def"
};

struct KernelInfo {
  std::string_view name;                    // needle_rt::name
  std::string_view signature;               // the NEEDLE_SIGNATURE it takes
  std::vector<std::string_view> parameters; // the signature's parameter names, in order
  KernelLayout layout;
  KernelMode mode;
  KernelIsa isa;
  KernelBackends backends;
};

namespace detail {

/// An internal error: the lowering, the selection and the registry disagree. (The kernel tests
/// build the weight layouts without exceptions too, for wasm32: there it aborts.)
[[noreturn]] inline void registryMismatch(const std::string &what) {
#if defined(__cpp_exceptions)
  throw std::logic_error("internal: " + what);
#else
  (void)what;
  std::abort();
#endif
}

inline std::vector<std::string_view> splitParameters(std::string_view list) {
  std::vector<std::string_view> names;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    names.push_back(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    list.remove_prefix(std::min(list.find_first_not_of(' '), list.size()));
  }
  return names;
}

inline std::string_view parametersOf(std::string_view signature) {
#define NEEDLE_SIGNATURE(name, parameters)                                                                             \
  if (signature == #name)                                                                                              \
    return parameters;
#include "runtime/needle_kernels.def"
  registryMismatch("runtime/needle_kernels.def has no signature " + std::string(signature));
}

inline const std::vector<KernelInfo> &registry() {
  static const std::vector<KernelInfo> kernels = [] {
    std::vector<KernelInfo> list;
#define NEEDLE_KERNEL(name, signature, layout, mode, isa, backends)                                                    \
  list.push_back({#name, #signature, splitParameters(parametersOf(#signature)), KernelLayout::layout,                  \
                  KernelMode::mode, KernelIsa::isa, KernelBackends::backends});
#include "runtime/needle_kernels.def"
    return list;
  }();
  return kernels;
}

} // namespace detail

/// Every registered kernel, in the registry's order (Kernel's).
inline const std::vector<KernelInfo> &allKernels() { return detail::registry(); }

inline const KernelInfo &kernelInfo(Kernel kernel) { return detail::registry()[static_cast<size_t>(kernel)]; }

/// The registered kernel called `name`, or null.
inline const KernelInfo *findKernel(std::string_view name) {
  const std::vector<KernelInfo> &kernels = detail::registry();
  const auto it = std::find_if(kernels.begin(), kernels.end(), [&](const KernelInfo &k) { return k.name == name; });
  return it == kernels.end() ? nullptr : &*it;
}

/// The kernel taking `base`'s signature that needs `isa` and reads no CQ layout (attention_avx2
/// for attention and Avx2). An internal error when the registry has none.
inline const KernelInfo &variantOf(std::string_view base, KernelIsa isa) {
  if (const KernelInfo *info = findKernel(base))
    for (const KernelInfo &kernel : detail::registry())
      if (kernel.signature == info->signature && kernel.isa == isa && kernel.layout == KernelLayout::None)
        return kernel;
  detail::registryMismatch("runtime/needle_kernels.def has no variant of " + std::string(base) + " for that ISA");
}

/// The argument of `call` named `parameter` in its kernel's signature. An internal error when
/// the kernel is not registered or takes no such parameter.
inline const KernelArg &argument(const KernelCall &call, std::string_view parameter) {
  const KernelInfo *info = findKernel(call.kernel);
  if (!info)
    detail::registryMismatch("kernel " + call.kernel + " is not in runtime/needle_kernels.def");
  const auto it = std::find(info->parameters.begin(), info->parameters.end(), parameter);
  const size_t index = static_cast<size_t>(it - info->parameters.begin());
  if (it == info->parameters.end() || index >= call.args.size())
    detail::registryMismatch("kernel " + call.kernel + " has no argument " + std::string(parameter));
  return call.args[index];
}
inline KernelArg &argument(KernelCall &call, std::string_view parameter) {
  return const_cast<KernelArg &>(argument(std::as_const(call), parameter));
}
inline int64_t argValue(const KernelCall &call, std::string_view parameter) { return argument(call, parameter).value; }

/// An internal error unless every call of `program` names a registered kernel with as many
/// arguments as its signature has parameters.
inline void verifyKernelCalls(const KernelProgram &program) {
  forEachCall(program, [](const KernelCall &call) {
    if (call.kernel.empty())
      return; // a comment line
    const KernelInfo *info = findKernel(call.kernel);
    if (!info)
      detail::registryMismatch("kernel " + call.kernel + " is not in runtime/needle_kernels.def");
    if (call.args.size() != info->parameters.size())
      detail::registryMismatch("kernel " + call.kernel + " takes " + std::to_string(info->parameters.size()) +
                               " arguments, the call passes " + std::to_string(call.args.size()));
  });
}

inline std::string_view layoutName(KernelLayout layout) {
  constexpr std::string_view names[] = {"file", "CqLut16", "CqLutDword", "CqLutChunkMajor", "CqX8"};
  return names[static_cast<int>(layout)];
}

inline std::string_view isaName(KernelIsa isa) {
  constexpr std::string_view names[] = {"portable", "avx2", "avx512", "avx512vnni", "simd128", "neon"};
  return names[static_cast<int>(isa)];
}

/// The name a kernel of these columns takes (runtime/needle_kernels.def):
/// <signature>[_<layout>_<mode>][_<isa>].
inline std::string kernelNameFor(std::string_view signature, KernelLayout layout, KernelMode mode, KernelIsa isa) {
  constexpr std::string_view layouts[] = {"", "lut16", "dword", "chunkmajor", "x8"};
  std::string name(signature);
  if (layout != KernelLayout::None)
    name += "_" + std::string(layouts[static_cast<int>(layout)]) + (mode == KernelMode::Fast ? "_fast" : "_exact");
  if (isa != KernelIsa::Portable)
    name += "_" + std::string(isaName(isa));
  return name;
}

} // namespace needle
