// The runtime's scalar helpers (runtime/kernels/scalars.h) against the project's own
// (RuntimeTestSupport.h says how the runtime's tests compare).
#include "RuntimeTestSupport.h"

#include "Support/Half.h"

using namespace needle;
using namespace needle::runtime_test;

namespace {

TEST(RuntimeScalars, HalfToFloatIsExactOnEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float got = needle_rt::half_to_float(static_cast<uint16_t>(h));
    const float want = halfToFloat(static_cast<uint16_t>(h));
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(needle_rt::half_to_float(0x0001), 0x1p-24f); // smallest subnormal
  EXPECT_EQ(needle_rt::half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(needle_rt::half_to_float(0xFBFF), -65504.0f);
}

} // namespace
