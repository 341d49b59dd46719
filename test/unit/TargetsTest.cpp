// --target, --mcpu and --mattr to triples, CPUs, features and runtime architectures
// (docs/targets.md).
#include "targets/Targets.h"

#include "Support/Error.h"

#include <gtest/gtest.h>

namespace needle {
namespace {

TEST(Targets, NamedTargetsHaveTheirTriplesAndDefaults) {
  const TargetSpec x86 = resolveTarget("x86_64", "", "");
  EXPECT_EQ(x86.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(x86.cpu, "x86-64");
  EXPECT_EQ(x86.arch, RuntimeArch::X86_64);
  const TargetSpec arm = resolveTarget("armv7", "", "");
  EXPECT_EQ(arm.triple, "armv7-unknown-linux-gnueabihf");
  EXPECT_EQ(arm.features, "+armv7-a,+neon");
  EXPECT_EQ(arm.arch, RuntimeArch::Arm);
  const TargetSpec riscv = resolveTarget("riscv64", "", "");
  EXPECT_EQ(riscv.abi, "lp64d");
  EXPECT_EQ(resolveTarget("wasm32", "", "").features, "+simd128");
}

TEST(Targets, McpuReplacesAndMattrAppends) {
  const TargetSpec spec = resolveTarget("aarch64", "cortex-a76", "+dotprod");
  EXPECT_EQ(spec.cpu, "cortex-a76");
  EXPECT_EQ(spec.features, "+neon,+dotprod");
  EXPECT_EQ(resolveTarget("x86_64", "", "+avx2").features, "+avx2");
}

TEST(Targets, TriplesGetTheirArchitecturesRuntime) {
  EXPECT_EQ(resolveTarget("arm64-apple-ios", "", "").arch, RuntimeArch::AArch64);
  EXPECT_EQ(resolveTarget("x86_64-pc-windows-msvc", "", "").arch, RuntimeArch::X86_64);
  const TargetSpec m4 = resolveTarget("thumbv7em-none-eabihf", "", "");
  EXPECT_EQ(m4.arch, RuntimeArch::Arm);
  EXPECT_EQ(m4.cpu, "cortex-m4");
}

TEST(Targets, UnknownNamesAndArchitecturesAreErrors) {
  try {
    resolveTarget("sparc", "", "");
    FAIL() << "sparc resolved";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("is not host, x86_64"), std::string::npos) << e.what();
  }
  try {
    resolveTarget("mips-unknown-linux-gnu", "", "");
    FAIL() << "mips resolved";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("architecture \"mips\""), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(checkTargetName("mips-unknown-linux-gnu")); // --emit cpp serves it
}

} // namespace
} // namespace needle
