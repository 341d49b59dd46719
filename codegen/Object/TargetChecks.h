// What needlec checks about a target before LLVM generates code for it, and how LLVM's own
// errors reach the user: as one `needlec: error:` line, never an abort or a silent object.
#pragma once

#include "targets/Targets.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/MC/TargetRegistry.h"

#include <string>

namespace needle {

/// Fails when --mcpu or a --mattr feature is unknown to LLVM for the target (LLVM would only
/// warn and ignore it), or when the features contradict the float ABI the triple declares: the
/// object would pass floats in registers the CPU lacks (LLVM aborts) or in integer registers
/// while its ELF header says otherwise (the product reads NaN).
void checkTarget(const llvm::Target &backend, const TargetSpec &target);

/// While alive, LLVM's fatal errors end the tool at once with one error line naming the target
/// ("<tool>: error: --target T: LLVM cannot generate code: ...", status 1) instead of "LLVM
/// ERROR" and an abort, and error diagnostics in `context` (LLVM prints them and goes on) are
/// collected: throwIfAny() turns the first into a needle::Error.
class LlvmErrorGuard {
public:
  LlvmErrorGuard(llvm::LLVMContext &context, const TargetSpec &target);
  ~LlvmErrorGuard();
  LlvmErrorGuard(const LlvmErrorGuard &) = delete;
  LlvmErrorGuard &operator=(const LlvmErrorGuard &) = delete;
  void throwIfAny() const;

private:
  std::string prefix_; // "--target NAME"
  std::string firstError_;
};

} // namespace needle
