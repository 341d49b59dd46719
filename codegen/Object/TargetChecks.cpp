#include "codegen/Object/TargetChecks.h"

#include "Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/TargetParser/Triple.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace needle {

namespace {

/// LLVM only warns about (and ignores) a CPU or feature it does not know; needlec refuses them.
void checkCpuAndFeatures(const llvm::MCSubtargetInfo &info, const TargetSpec &target) {
  if (!target.cpu.empty() && !info.isCPUStringValid(target.cpu))
    fail("--mcpu: \"{}\" is not a CPU LLVM knows for {}", target.cpu, target.triple);
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(target.features).split(features, ',', -1, false);
  for (llvm::StringRef feature : features) {
    const bool known = (feature.starts_with("+") || feature.starts_with("-")) &&
                       llvm::any_of(info.getAllProcessorFeatures(),
                                    [&](const llvm::SubtargetFeatureKV &kv) { return feature.drop_front() == kv.Key; });
    if (!known)
      fail("--mattr: \"{}\" is not a feature LLVM knows for {} (write +name or -name)", feature.str(), target.triple);
  }
}

/// What the triple's ABI is called, the features it needs in the CPU and one that would change
/// it; none for armv7 gnueabi's soft-float ABI or wasm32.
struct FloatAbi {
  const char *name = nullptr;
  const char *needs = nullptr;   // LLVM features, all required
  const char *refuses = nullptr; // a feature that moves floats to integer registers
};

FloatAbi floatAbiOf(const TargetSpec &target) {
  const llvm::Triple triple(target.triple);
  switch (target.arch) {
  case RuntimeArch::X86_64:
    return {"the x86-64 psABI (floats in SSE registers)", "+sse,+sse2", "+soft-float"};
  case RuntimeArch::AArch64:
    return {"AAPCS64 (floats in FP/SIMD registers)", "+fp-armv8,+neon", nullptr};
  case RuntimeArch::Arm:
    if (triple.isHardFloatABI() || triple.getEnvironment() == llvm::Triple::EABIHF)
      return {"the hard-float ABI of its eabihf triple (floats in VFP registers)", "+vfp2sp", "+soft-float"};
    return {};
  case RuntimeArch::RiscV64: // RV64E would silently switch either ABI to lp64e
    if (target.abi == "lp64d")
      return {"lp64d (floats in F/D registers)", "+f,+d", "+e"};
    return {"lp64 (floats in integer registers)", nullptr, "+e"};
  case RuntimeArch::Wasm32:
    return {};
  }
  return {};
}

/// The first of the comma-separated `features` that `info` lacks, or "".
std::string missingFeature(const llvm::MCSubtargetInfo &info, const char *features) {
  llvm::SmallVector<llvm::StringRef> list;
  llvm::StringRef(features).split(list, ',');
  for (llvm::StringRef feature : list)
    if (!info.checkFeatures(feature))
      return feature.str();
  return "";
}

void checkFloatAbi(const llvm::MCSubtargetInfo &info, const TargetSpec &target) {
  const FloatAbi abi = floatAbiOf(target);
  if (!abi.name)
    return;
  const std::string cpu = target.cpu.empty() ? "" : fmt::format(" (cpu {})", target.cpu);
  if (const std::string missing = abi.needs ? missingFeature(info, abi.needs) : ""; !missing.empty())
    fail("--target {}: the target's ABI is {}, but its CPU{} has no {}: choose a --mcpu with it, and do not remove "
         "it with --mattr",
         target.name, abi.name, cpu, missing.substr(1));
  if (abi.refuses && info.checkFeatures(abi.refuses))
    fail("--target {}: --mattr {} contradicts the target's ABI, {}", target.name, abi.refuses, abi.name);
}

/// Ends the tool with one error line. It cannot throw: LLVM's frames have no landing pads, so
/// unwinding through them would leak and skip their cleanup; and it must not return, or LLVM
/// aborts. Nothing is written yet when code generation fails (outputs are staged after it).
[[noreturn]] void onFatalError(void *prefix, const char *reason, bool) {
  const std::string line =
      oneLine(fmt::format("{}: LLVM cannot generate code: {}", *static_cast<const std::string *>(prefix), reason));
  std::fprintf(stderr, "%s: error: %s\n", program_invocation_short_name, line.c_str());
  std::fflush(nullptr);
  std::_Exit(1);
}

void onDiagnostic(const llvm::DiagnosticInfo *diagnostic, void *firstError) {
  std::string &first = *static_cast<std::string *>(firstError);
  if (diagnostic->getSeverity() != llvm::DS_Error || !first.empty())
    return;
  llvm::raw_string_ostream stream(first);
  llvm::DiagnosticPrinterRawOStream printer(stream);
  diagnostic->print(printer);
}

} // namespace

void checkTarget(const llvm::Target &backend, const TargetSpec &target) {
  std::unique_ptr<llvm::MCSubtargetInfo> known(backend.createMCSubtargetInfo(target.triple, "", ""));
  checkCpuAndFeatures(*known, target);
  std::unique_ptr<llvm::MCSubtargetInfo> chosen(
      backend.createMCSubtargetInfo(target.triple, target.cpu, target.features));
  checkFloatAbi(*chosen, target);
}

LlvmErrorGuard::LlvmErrorGuard(llvm::LLVMContext &context, const TargetSpec &target)
    : prefix_("--target " + target.name) {
  llvm::install_fatal_error_handler(onFatalError, &prefix_);
  context.setDiagnosticHandlerCallBack(onDiagnostic, &firstError_);
}

LlvmErrorGuard::~LlvmErrorGuard() { llvm::remove_fatal_error_handler(); }

void LlvmErrorGuard::throwIfAny() const {
  if (!firstError_.empty())
    fail("{}: LLVM cannot generate code: {}", prefix_, firstError_);
}

} // namespace needle
