#include "Support/Version.h"

#include "NeedleVersion.inc"

#include <fmt/format.h>

std::string needle::versionText(std::string_view tool) {
  return fmt::format("{} {} (commit {})\n  built with LLVM/MLIR {}, Halide {}\n", tool, NEEDLE_VERSION, NEEDLE_COMMIT,
                     NEEDLE_LLVM_VERSION, NEEDLE_HALIDE_VERSION);
}
