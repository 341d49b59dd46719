// What every tool prints for --version.
#pragma once

#include <string>
#include <string_view>

namespace needle {

/// "<version> (commit <id>)": what generated files say made them.
std::string versionString();

/// "<tool> <version> (commit <id>)" and the LLVM/MLIR and Halide versions it was built with.
std::string versionText(std::string_view tool);

} // namespace needle
