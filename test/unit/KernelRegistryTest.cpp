// The kernel registry (runtime/needle_kernels.def through codegen/Select/KernelRegistry.h):
// arguments by name, variants by instruction set, and the check of a program's calls.
#include "codegen/Select/KernelRegistry.h"

#include <gtest/gtest.h>

#include <set>

using namespace needle;

namespace {

KernelCall attentionCall(int64_t dv) {
  KernelCall call{"attention", {}, ""};
  for (int i = 0; i < 14; ++i)
    call.args.push_back(KernelArg::i64(100 + i));
  call.args[6] = KernelArg::i64(dv);
  return call;
}

TEST(KernelRegistry, ReadsArgumentsByTheirNames) {
  const KernelCall call = attentionCall(48);
  EXPECT_EQ(argValue(call, "heads"), 103);
  EXPECT_EQ(argValue(call, "dv"), 48);
  EXPECT_EQ(argValue(call, "capacity"), 108);
  EXPECT_THROW(argValue(call, "rows"), std::logic_error);
  EXPECT_THROW(argValue(KernelCall{"no_such_kernel", {}, ""}, "rows"), std::logic_error);
}

TEST(KernelRegistry, VariantsShareTheirBasesSignature) {
  EXPECT_EQ(variantOf("attention", KernelIsa::Avx2).name, "attention_avx2");
  EXPECT_EQ(variantOf("attention", KernelIsa::Avx512).name, "attention_avx512");
  EXPECT_EQ(variantOf("hadamard", KernelIsa::Avx512).name, "hadamard_avx512");
  EXPECT_EQ(variantOf("mhc_gates", KernelIsa::Avx2).name, "mhc_gates_avx2");
  EXPECT_THROW(variantOf("mhc_gates", KernelIsa::Avx512), std::logic_error);
  for (const char *name : {"attention_avx512", "cq_matmul_chunkmajor_exact_avx512vnni", "cq_matmul_x8_exact"}) {
    const KernelInfo *info = findKernel(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->parameters, findKernel(info->signature)->parameters) << name;
  }
}

TEST(KernelRegistry, EveryKernelIsListedOnceWithItsOwnEnumerator) {
  std::set<std::string_view> names;
  EXPECT_EQ(kernelInfo(Kernel::cq_matvec).name, "cq_matvec");
  EXPECT_EQ(kernelInfo(Kernel::cq_matmul_dword_fast_avx512vnni).layout, KernelLayout::CqLutDword);
  EXPECT_EQ(kernelInfo(Kernel::cq_matmul_dword_fast_avx512vnni).isa, KernelIsa::Avx512Vnni);
  for (const KernelInfo &info : allKernels()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.parameters.empty()) << info.name;
    EXPECT_EQ(findKernel(info.name), &info);
  }
  EXPECT_EQ(kernelInfo(Kernel::cq_matmul).parameters.back(), "n");
}

TEST(KernelRegistry, EveryNameSaysItsColumnsInOneOrder) {
  EXPECT_EQ(kernelNameFor("cq_matmul", KernelLayout::CqLutDword, KernelMode::Fast, KernelIsa::Avx512Vnni),
            "cq_matmul_dword_fast_avx512vnni");
  EXPECT_EQ(kernelNameFor("cq_matmul", KernelLayout::CqX8, KernelMode::Exact, KernelIsa::Portable),
            "cq_matmul_x8_exact");
  EXPECT_EQ(kernelNameFor("attention", KernelLayout::None, KernelMode::Exact, KernelIsa::Avx2), "attention_avx2");
  EXPECT_EQ(kernelNameFor("cq_matmul", KernelLayout::None, KernelMode::Exact, KernelIsa::Portable), "cq_matmul");
  for (const KernelInfo &info : allKernels()) {
    EXPECT_EQ(info.name, kernelNameFor(info.signature, info.layout, info.mode, info.isa));
    if (info.layout == KernelLayout::None) {
      EXPECT_EQ(info.mode, KernelMode::Exact) << info.name << ": only a re-laid CQ kernel has a fast mode";
    }
  }
}

TEST(KernelRegistry, VerifyRejectsCallsTheRegistryDoesNotDescribe) {
  KernelProgram program;
  program.rungs[0].step.push_back({StepStage::Kind::EachToken, {attentionCall(16), KernelCall{"", {}, "a comment"}}});
  EXPECT_NO_THROW(verifyKernelCalls(program));
  program.rungs[0].step[0].calls[0].args.pop_back();
  EXPECT_THROW(verifyKernelCalls(program), std::logic_error);
  program.rungs[0].step[0].calls[0] = KernelCall{"attention_avx1024", {}, ""};
  EXPECT_THROW(verifyKernelCalls(program), std::logic_error);
}

} // namespace
