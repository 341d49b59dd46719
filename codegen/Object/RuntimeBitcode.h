// The runtime (runtime/needle_object.cpp) as LLVM bitcode, one module per architecture, compiled
// by clang-19 when needlec was built and carried inside it.
#pragma once

#include "targets/Targets.h"

#include <string_view>

namespace needle {

std::string_view runtimeBitcode(RuntimeArch arch);

} // namespace needle
