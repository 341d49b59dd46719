// What a compiled program needs its target to address: the session arena (sized by max_seq_len
// and --batch) and the weights. A 32-bit target cannot hold a 6 GiB arena; without this check
// its size_t arithmetic wraps and the session's buffers alias. Plain C++, no MLIR.
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include <string>

namespace needle {

/// The largest object a target with `pointerBits`-bit pointers can address: its PTRDIFF_MAX.
int64_t largestObject(unsigned pointerBits);

/// Fails naming the arena or the weights when one of them is larger than largestObject()
/// allows; `target` names the target in the message.
void checkFitsAddressSpace(const KernelProgram &program, unsigned pointerBits, const std::string &target);

} // namespace needle
