#include "targets/Targets.h"

#include "Support/Error.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/ARMTargetParser.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <array>

namespace needle {

namespace {

/// The named targets: a triple and the CPU and features a product for it can assume.
struct NamedTarget {
  const char *name, *triple, *cpu, *features;
};
// x86_64 assumes only the x86-64 baseline (SSE2), like a C compiler; --mcpu x86-64-v3 or
// --mattr +avx2,+fma opt in to more. armv7 assumes NEON (every Cortex-A7 and later has it).
constexpr std::array kNamedTargets = {
    NamedTarget{"x86_64", "x86_64-unknown-linux-gnu", "x86-64", ""},
    NamedTarget{"aarch64", "aarch64-unknown-linux-gnu", "generic", "+neon"},
    NamedTarget{"armv7", "armv7-unknown-linux-gnueabihf", "generic", "+armv7-a,+neon"},
    NamedTarget{"riscv64", "riscv64-unknown-linux-gnu", "generic-rv64", "+m,+a,+f,+d,+c"},
    NamedTarget{"wasm32", "wasm32-unknown-wasi", "generic", "+simd128"},
};

/// The runtime bitcode that serves `triple`'s architecture.
RuntimeArch archOf(const llvm::Triple &triple, const std::string &name) {
  switch (triple.getArch()) {
  case llvm::Triple::x86_64:
    return RuntimeArch::X86_64;
  case llvm::Triple::aarch64:
    return RuntimeArch::AArch64;
  case llvm::Triple::arm:
  case llvm::Triple::thumb:
    return RuntimeArch::Arm;
  case llvm::Triple::riscv64:
    return RuntimeArch::RiscV64;
  case llvm::Triple::wasm32:
    return RuntimeArch::Wasm32;
  default:
    fail("--target: \"{}\" has architecture \"{}\", which needlec has no runtime for "
         "(supported: x86_64, aarch64, arm/thumb, riscv64, wasm32; --emit cpp serves any other)",
         name, triple.getArchName().str());
  }
}

/// An Arm triple's default CPU: the architecture's own (cortex-m4 for thumbv7em, ...), unless
/// the triple is eabihf and that CPU has no FPU (LLVM's for thumbv8m.main is "generic"): then the
/// architecture's first CPU with one, as the hard-float ABI implies.
std::string armDefaultCpu(const llvm::Triple &triple) {
  const std::string cpu = llvm::ARM::getARMCPUForArch(triple).str();
  const llvm::ARM::ArchKind arch = llvm::ARM::parseArch(triple.getArchName());
  const bool hardFloat = triple.isHardFloatABI() || triple.getEnvironment() == llvm::Triple::EABIHF;
  const llvm::ARM::FPUKind fpu = llvm::ARM::getDefaultFPU(cpu, arch);
  const bool hasFpu = cpu != "generic" && fpu != llvm::ARM::FK_NONE && fpu != llvm::ARM::FK_INVALID;
  if (!hardFloat || hasFpu)
    return cpu;
  switch (arch) {
  case llvm::ARM::ArchKind::ARMV8MMainline:
    return "cortex-m33";
  case llvm::ARM::ArchKind::ARMV8_1MMainline:
    return "cortex-m55";
  case llvm::ARM::ArchKind::ARMV7EM:
    return "cortex-m4";
  default:
    return cpu; // TargetChecks refuses it, naming the ABI and the missing FPU
  }
}

/// The CPU and features an arbitrary triple of `arch` gets by default.
std::pair<std::string, std::string> defaultsFor(const llvm::Triple &triple, RuntimeArch arch) {
  switch (arch) {
  case RuntimeArch::X86_64:
    return {"x86-64", ""};
  case RuntimeArch::AArch64:
    return {"generic", "+neon"};
  case RuntimeArch::Arm:
    return {armDefaultCpu(triple), ""};
  case RuntimeArch::RiscV64:
    return {"generic-rv64", "+m,+a,+f,+d,+c"};
  case RuntimeArch::Wasm32:
    return {"generic", "+simd128"};
  }
  return {};
}

std::string joinFeatures(const std::string &base, const std::string &extra) {
  if (base.empty() || extra.empty())
    return base + extra;
  return base + "," + extra;
}

/// Whether the last mention of `feature` in comma-separated `features` adds it (+feature).
bool lastSays(const std::string &features, const std::string &feature) {
  bool on = false;
  std::string::size_type start = 0;
  while (start <= features.size()) {
    const std::string::size_type end = std::min(features.find(',', start), features.size());
    const std::string item = features.substr(start, end - start);
    if (item == "+" + feature || item == "-" + feature)
      on = item[0] == '+';
    start = end + 1;
  }
  return on;
}

std::string hostFeatures() {
  std::string features;
  for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    if (enabled)
      features = joinFeatures(features, "+" + feature.str());
  return features;
}

/// An Arm CPU of another profile than the triple's (cortex-a53 on thumbv7em, cortex-m4 on armv7)
/// is an error: LLVM would take it and emit code the target cannot run. CPUs LLVM does not know
/// are left to its own check.
void checkArmProfile(const llvm::Triple &triple, const std::string &name, const std::string &mcpu) {
  const llvm::ARM::ArchKind cpuArch = llvm::ARM::parseCPUArch(mcpu);
  const llvm::ARM::ArchKind targetArch = llvm::ARM::parseArch(triple.getArchName());
  if (cpuArch == llvm::ARM::ArchKind::INVALID || targetArch == llvm::ARM::ArchKind::INVALID)
    return;
  const llvm::StringRef cpuArchName = llvm::ARM::getArchName(cpuArch);
  const llvm::StringRef targetArchName = llvm::ARM::getArchName(targetArch);
  if (llvm::ARM::parseArchProfile(cpuArchName) == llvm::ARM::parseArchProfile(targetArchName))
    return;
  const std::string suggestion = armDefaultCpu(triple);
  fail("--mcpu {}: an {} CPU, not one of --target {}'s profile ({}); choose a CPU of that profile{}", mcpu,
       cpuArchName.str(), name, targetArchName.str(), suggestion == "generic" ? "" : ", such as " + suggestion);
}

/// The oldest OS version Xcode 15 deploys to, as a triple's OS part (arm64 macOS: its first, 11.0).
const char *appleMinimumOs(const llvm::Triple &triple) {
  switch (triple.getOS()) {
  case llvm::Triple::IOS:
    return "ios12.0";
  case llvm::Triple::TvOS:
    return "tvos12.0";
  case llvm::Triple::WatchOS:
    return "watchos4.0";
  case llvm::Triple::XROS:
    return "xros1.0";
  default: // macOS, under any of its names
    return triple.getArch() == llvm::Triple::aarch64 ? "macos11.0" : "macos10.13";
  }
}

/// An Apple triple without an OS version gets appleMinimumOs(), so the object carries a
/// build-version load command and Apple's linker does not warn about an object without one. A
/// versioned triple keeps its own.
std::string withAppleMinimum(const llvm::Triple &triple) {
  if (!triple.isOSDarwin() || triple.getOSVersion() != llvm::VersionTuple())
    return triple.str();
  llvm::Triple versioned = triple;
  versioned.setOSName(appleMinimumOs(triple));
  return versioned.str();
}

} // namespace

void checkTargetName(const std::string &name) {
  for (const char *known : {"host", "x86_64", "aarch64", "armv7", "riscv64", "wasm32"})
    if (name == known)
      return;
  if (std::count(name.begin(), name.end(), '-') < 1)
    fail("--target: \"{}\" is not host, x86_64, aarch64, armv7, riscv64, wasm32 or an LLVM triple "
         "(arch-vendor-os[-env], or arch-os as in wasm32-wasip1)",
         name);
}

TargetSpec resolveTarget(const std::string &name, const std::string &mcpu, const std::string &mattr) {
  TargetSpec spec;
  spec.name = name;
  std::string cpu, features;
  if (name == "host") {
    spec.triple = llvm::sys::getProcessTriple();
    cpu = llvm::sys::getHostCPUName().str();
    features = hostFeatures();
  } else {
    for (const NamedTarget &target : kNamedTargets)
      if (name == target.name) {
        spec.triple = target.triple;
        cpu = target.cpu;
        features = target.features;
      }
    if (spec.triple.empty()) {
      checkTargetName(name);
      spec.triple = withAppleMinimum(llvm::Triple(llvm::Triple::normalize(name)));
    }
  }
  const llvm::Triple triple(spec.triple);
  spec.arch = archOf(triple, name);
  if (cpu.empty()) // a triple: its architecture's defaults
    std::tie(cpu, features) = defaultsFor(triple, spec.arch);
  spec.cpu = mcpu.empty() ? cpu : mcpu;
  if (spec.arch == RuntimeArch::Arm && !mcpu.empty())
    checkArmProfile(triple, name, mcpu);
  spec.features = joinFeatures(features, mattr);
  if (spec.arch == RuntimeArch::RiscV64)
    spec.abi = triple.isOSLinux() || lastSays(spec.features, "d") ? "lp64d" : "lp64"; // Linux's ABI is lp64d
  return spec;
}

const char *runtimeArchName(RuntimeArch arch) {
  switch (arch) {
  case RuntimeArch::X86_64:
    return "x86_64";
  case RuntimeArch::AArch64:
    return "aarch64";
  case RuntimeArch::Arm:
    return "arm";
  case RuntimeArch::RiscV64:
    return "riscv64";
  case RuntimeArch::Wasm32:
    return "wasm32";
  }
  return "";
}

} // namespace needle
