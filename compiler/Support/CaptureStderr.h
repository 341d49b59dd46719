// Runs code with standard error sent to a temporary file: for MLIR and LLVM code that reports
// straight to stderr, whose reports the tools turn into their one-line error contract.
#pragma once

#include <functional>
#include <string>

namespace needle {

/// Runs `run` with file descriptor 2 redirected and returns what was written there. `run` must
/// flush any buffered stream of its own (llvm::errs() is unbuffered).
std::string capturingStderr(const std::function<void()> &run);

} // namespace needle
