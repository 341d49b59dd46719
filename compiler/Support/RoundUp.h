// Rounding a size up to whole units (groups of 128, alignment boundaries).
#pragma once

#include <cstdint>

namespace needle {

/// The smallest multiple of `unit` that is >= n (n >= 0, unit > 0).
constexpr int64_t roundUp(int64_t n, int64_t unit) { return (n + unit - 1) / unit * unit; }

} // namespace needle
