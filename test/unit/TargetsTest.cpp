// --target, --mcpu and --mattr to triples, CPUs, features and runtime architectures
// (docs/targets.md).
#include "targets/Targets.h"
#include "codegen/Object/TargetChecks.h"

#include "Support/Error.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/Support/ErrorHandling.h"

#include <gtest/gtest.h>

#include <functional>

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

TEST(Targets, Riscv64AbiIsLinuxsLp64dOrWhatTheLastFeatureSays) {
  EXPECT_EQ(resolveTarget("riscv64", "", "-d").abi, "lp64d"); // refused later: Linux needs D
  // A bare-metal triple's default features include D; the last mention decides.
  EXPECT_EQ(resolveTarget("riscv64-unknown-elf", "", "").abi, "lp64d");
  EXPECT_EQ(resolveTarget("riscv64-unknown-elf", "", "-d").abi, "lp64");
  EXPECT_EQ(resolveTarget("riscv64-unknown-elf", "", "-d,+d").abi, "lp64d");
  EXPECT_EQ(resolveTarget("riscv64-unknown-elf", "", "-d,+dd").abi, "lp64");
}

std::string errorOf(const std::function<void()> &run) {
  try {
    run();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(LlvmErrorGuard, FatalErrorsAndErrorDiagnosticsBecomeOneLineErrors) {
  llvm::LLVMContext context;
  const TargetSpec target = resolveTarget("x86_64", "", "");
  {
    const LlvmErrorGuard guard(context, target);
    EXPECT_EXIT(llvm::report_fatal_error("Cannot select: node"), testing::ExitedWithCode(1),
                "^needle-ir-tests: error: --target x86_64: LLVM cannot generate code: Cannot select: node\n$");
    context.diagnose(llvm::DiagnosticInfoInlineAsm("a warning is not an error", llvm::DS_Warning));
    EXPECT_EQ(errorOf([&] { guard.throwIfAny(); }), "");
    context.diagnose(llvm::DiagnosticInfoInlineAsm("SSE register return with SSE disabled"));
    context.diagnose(llvm::DiagnosticInfoInlineAsm("a second error"));
    EXPECT_EQ(errorOf([&] { guard.throwIfAny(); }),
              "--target x86_64: LLVM cannot generate code: SSE register return with SSE disabled");
  }
}

} // namespace
} // namespace needle
