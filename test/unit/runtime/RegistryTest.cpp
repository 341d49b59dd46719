// The runtime's tests against the registry (runtime/needle_kernels.def): every kernel it lists
// is tested, by its family's test, on every CPU that runs it.
#include "RuntimeTestSupport.h"

#include <algorithm>
#include <map>

using namespace needle;
using namespace needle::runtime_test;

namespace {

// A signature with several kernels (an instruction set's, a layout's) is one whose family's test
// takes its kernels from the registry (checksEveryKernelOf), so a kernel registered is a kernel
// tested against the reference.
TEST(RuntimeRegistry, EverySignatureWithSeveralKernelsIsCheckedKernelByKernel) {
  std::map<std::string_view, int> kernels;
  for (const KernelInfo &info : allKernels())
    ++kernels[info.signature];
  const std::vector<std::string> &checked = checkedSignatures();
  for (const auto &[signature, count] : kernels) {
    if (count > 1) {
      EXPECT_NE(std::find(checked.begin(), checked.end(), signature), checked.end())
          << signature << " has " << count << " registered kernels; its family's test must take them from the "
          << "registry (checksEveryKernelOf, registeredKernels)";
    }
  }
}

// The tests reach every kernel this build compiles: the portable ones everywhere, each
// architecture's own where it is compiled.
TEST(RuntimeRegistry, EveryKernelThisBuildCompilesHasItsFunction) {
  for (const KernelInfo &info : allKernels()) {
    const bool compiled = info.isa == KernelIsa::Portable ||
#if NEEDLE_RT_X86_KERNELS
                          info.isa == KernelIsa::Avx2 || info.isa == KernelIsa::Avx512 ||
                          info.isa == KernelIsa::Avx512Vnni ||
#endif
                          false;
    EXPECT_EQ(runtime_test::detail::functionOf(info) != nullptr, compiled) << info.name;
  }
}

} // namespace
