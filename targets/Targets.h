// What `--target`, `--mcpu` and `--mattr` name: one description per target (docs/targets.md).
// Plain data and LLVM's triple parser; no MLIR.
#pragma once

#include <string>

namespace needle {

/// The architectures needlec carries runtime bitcode for (runtime/CMakeLists.txt).
enum class RuntimeArch { X86_64, AArch64, Arm, RiscV64, Wasm32 };

struct TargetSpec {
  std::string name;     // as given: host, x86_64, ..., or the triple
  std::string triple;   // normalized LLVM triple
  std::string cpu;      // --mcpu, or the target's default
  std::string features; // --mattr, appended to the target's default features
  std::string abi;      // LLVM's target ABI name where it matters (riscv64: lp64d), else empty
  RuntimeArch arch;
};

/// Resolves `--target name` with `--mcpu`/`--mattr` (empty: the target's defaults). Fails with
/// a one-line error for a name that is neither a known target nor a triple of a supported
/// architecture.
TargetSpec resolveTarget(const std::string &name, const std::string &mcpu, const std::string &mattr);

/// Fails unless `name` is a named target or has the shape of a triple (what --emit cpp needs).
void checkTargetName(const std::string &name);

/// "x86_64", "aarch64", "arm", "riscv64" or "wasm32".
const char *runtimeArchName(RuntimeArch arch);

} // namespace needle
