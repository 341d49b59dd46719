#include "RuntimeTestSupport.h"

#include <algorithm>
#include <map>

namespace needle::runtime_test {

bool hostRuns(KernelIsa isa) {
  switch (isa) {
  case KernelIsa::Portable:
    return true;
#if NEEDLE_RT_X86_KERNELS
  case KernelIsa::Avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  case KernelIsa::Avx512:
    return hostRuns(KernelIsa::Avx2) && __builtin_cpu_supports("avx512f");
  case KernelIsa::Avx512Vnni:
    return hostRuns(KernelIsa::Avx512) && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi") &&
           __builtin_cpu_supports("avx512vnni");
#endif
  default:
    return false;
  }
}

namespace detail {

AnyFunction functionOf(const KernelInfo &kernel) {
  // The registry's kernels by name, as the runtime's object exports them (needle_object.cpp).
  static const std::map<std::string_view, AnyFunction> functions = {
#define NEEDLE_TEST_KERNEL(name) {#name, reinterpret_cast<AnyFunction>(&needle_rt::name)},
#define NEEDLE_TEST_KERNEL_Portable NEEDLE_TEST_KERNEL
#if NEEDLE_RT_X86_KERNELS
#define NEEDLE_TEST_KERNEL_Avx2 NEEDLE_TEST_KERNEL
#define NEEDLE_TEST_KERNEL_Avx512 NEEDLE_TEST_KERNEL
#define NEEDLE_TEST_KERNEL_Avx512Vnni NEEDLE_TEST_KERNEL
#else
#define NEEDLE_TEST_KERNEL_Avx2(name)
#define NEEDLE_TEST_KERNEL_Avx512(name)
#define NEEDLE_TEST_KERNEL_Avx512Vnni(name)
#endif
#if NEEDLE_RT_WASM_KERNELS
#define NEEDLE_TEST_KERNEL_Simd128 NEEDLE_TEST_KERNEL
#else
#define NEEDLE_TEST_KERNEL_Simd128(name)
#endif
#if NEEDLE_RT_NEON_KERNELS
#define NEEDLE_TEST_KERNEL_Neon NEEDLE_TEST_KERNEL
#else
#define NEEDLE_TEST_KERNEL_Neon(name)
#endif
#define NEEDLE_KERNEL(name, signature, layout, mode, isa, backends) NEEDLE_TEST_KERNEL_##isa(name)
#include "runtime/needle_kernels.def"
  };
  const auto it = functions.find(kernel.name);
  return it == functions.end() ? nullptr : it->second;
}

static std::vector<std::string> &checked() {
  static std::vector<std::string> signatures;
  return signatures;
}

} // namespace detail

bool checksEveryKernelOf(std::string_view signature) {
  std::vector<std::string> &signatures = detail::checked();
  if (std::find(signatures.begin(), signatures.end(), signature) == signatures.end())
    signatures.emplace_back(signature);
  return true;
}

const std::vector<std::string> &checkedSignatures() { return detail::checked(); }

} // namespace needle::runtime_test
