#include "Support/Version.h"

#include "NeedleVersion.inc"

#include <fmt/format.h>

std::string needle::versionString() { return fmt::format("{} (commit {})", NEEDLE_VERSION, NEEDLE_COMMIT); }

std::string needle::versionText(std::string_view tool) {
  return fmt::format("{} {}\n  built with LLVM/MLIR {}, Halide {}\n", tool, versionString(), NEEDLE_LLVM_VERSION,
                     NEEDLE_HALIDE_VERSION);
}
