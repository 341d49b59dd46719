// What the runtime's unit tests share (test/unit/runtime/<Family>Test.cpp): random inputs, the
// comparisons, the CPU's instruction sets, and the registry's kernels with their functions.
//
// Each family's test checks the runtime's kernels of that family against the reference
// interpreter's own function for each (compiler/Reference, compiler/Quant), on random inputs.
// Where the registry (runtime/needle_kernels.def) has several kernels of a signature, the
// family's test takes them from it (registeredKernels), so registering a kernel also tests it.
//
// Tolerances: a vector is compared by its error relative to its largest expected value,
// max_i |got_i − want_i| / max_i |want_i|, so cancellation in one element does not fail a
// correct kernel. The runtime accumulates in f32 and the reference in double, so a single
// kernel is held to 1e-5 (or bit equality where both do the same f32 operations); longer
// chains say why they need more. NEEDLE_RUNTIME_TEST_VERBOSE=1 prints every measured error.
#pragma once

#include "needle_runtime.h"

#include "Model/Synth.h"
#include "codegen/Select/KernelRegistry.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace needle::runtime_test {

using Vec = std::vector<float>;

inline Vec normals(const std::string &name, int64_t count, double stddev = 1.0) {
  return randomNormals(20261129, name, count, stddev);
}

/// max |got − want| / max |want|; NaN when any value is NaN (std::max would drop it).
inline double relativeError(std::span<const float> got, std::span<const float> want) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double difference = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(difference <= error))
      error = difference;
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return scale > 0 ? error / scale : error;
}

inline void expectClose(std::span<const float> got, std::span<const float> want, double tolerance,
                        const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double error = relativeError(got, want);
  if (std::getenv("NEEDLE_RUNTIME_TEST_VERBOSE"))
    std::printf("  [measured] %-60s %.3g (tolerance %.0g)\n", what.c_str(), error, tolerance);
  EXPECT_LE(error, tolerance) << what;
}

inline void expectClose(float got, float want, double tolerance, const std::string &what) {
  expectClose(std::span(&got, 1), std::span(&want, 1), tolerance, what);
}

inline void expectBitEqual(std::span<const float> got, std::span<const float> want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << what << " at " << i;
}

/// Whether this CPU runs kernels that need `isa` (and this build compiled them).
bool hostRuns(KernelIsa isa);

#if NEEDLE_RT_X86_KERNELS
inline bool hasAvx2() { return hostRuns(KernelIsa::Avx2); }
inline bool hasAvx512() { return hostRuns(KernelIsa::Avx512); }
inline bool hasAvx512Vnni() { return hostRuns(KernelIsa::Avx512Vnni); }
#endif

/// A registered kernel and its function, as its signature's type.
template <typename Function> struct Registered {
  const KernelInfo *info;
  Function function;
};

namespace detail {
using AnyFunction = void (*)();
/// The function of every registered kernel this build compiles (x86 kernels on x86-64, simd128
/// ones on wasm), null for the others.
AnyFunction functionOf(const KernelInfo &kernel);
} // namespace detail

/// Says, at namespace scope in the family's test (`const bool kChecked = checksEveryKernelOf(...)`),
/// that it takes every registered kernel of `signature` from the registry; RegistryTest.cpp
/// requires this of every signature with more than one kernel. Returns true.
bool checksEveryKernelOf(std::string_view signature);

/// The signatures the families' tests said so of.
const std::vector<std::string> &checkedSignatures();

/// Every registered kernel of `signature` that this CPU runs, as Function (the signature's type).
template <typename Function> std::vector<Registered<Function>> registeredKernels(std::string_view signature) {
  std::vector<Registered<Function>> kernels;
  for (const KernelInfo &info : allKernels())
    if (info.signature == signature && hostRuns(info.isa))
      if (detail::AnyFunction function = detail::functionOf(info))
        kernels.push_back({&info, reinterpret_cast<Function>(function)});
  return kernels;
}

} // namespace needle::runtime_test
