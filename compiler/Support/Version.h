// What every tool prints for --version.
#pragma once

#include <string>
#include <string_view>

namespace needle {

/// "<tool> <version> (commit <id>)" and the LLVM/MLIR and Halide versions it was built with.
std::string versionText(std::string_view tool);

} // namespace needle
