// The runtime's kernels of the causal taps (runtime/kernels/taps.h), against the reference (RuntimeTestSupport.h says
// how).
#include "RuntimeTestSupport.h"

#include "Quant/Cq.h"
#include "Reference/Block.h"
#include "Reference/Heads.h"
#include "Reference/Kernels.h"
#include "Support/Half.h"
#include "codegen/Select/WeightLayouts.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <tuple>

using namespace needle;
using namespace needle::runtime_test;
namespace ref = needle::reference;

namespace {

void checkTaps(int64_t count, int64_t stride, bool inPlace, int64_t rollback = 0) {
  const int64_t n = 24, positions = 3 * stride * count + 5;
  const std::string tag = "taps count=" + std::to_string(count) + " stride=" + std::to_string(stride) +
                          " rollback=" + std::to_string(rollback) + (inPlace ? " in place" : "");
  const Vec taps = normals(tag + " w", count * n);
  const int64_t capacity = needle_rt::taps_capacity(count, stride, rollback);
  Vec ring(needle_rt::taps_state_floats(n, count, stride, rollback), 1e30f); // stale contents must never be read
  std::deque<Vec> history;
  for (int64_t t = 0; t < positions; ++t) {
    const Vec x = normals(tag + " x" + std::to_string(t), n);
    const Vec want = ref::applyTaps(x, history, taps, count, stride);
    ref::remember(history, x, static_cast<size_t>(stride * (count - 1)));
    Vec got(n);
    if (inPlace) {
      got = x;
      needle_rt::causal_taps(got.data(), n, taps.data(), count, stride, capacity, ring.data(), t, got.data());
    } else {
      needle_rt::causal_taps(x.data(), n, taps.data(), count, stride, capacity, ring.data(), t, got.data());
    }
    expectClose(got, want, 1e-5, tag + " t=" + std::to_string(t));
  }
}

/// A ring with `rollback` spare slots goes back that many positions: feeding other inputs from
/// there gives what a ring fed only the kept inputs gives, bit for bit.
void checkTapsRollback(int64_t count, int64_t stride, int64_t rollback) {
  const int64_t n = 8, fed = 2 * stride * count + 7;
  const std::string tag = "taps rollback count=" + std::to_string(count) + " stride=" + std::to_string(stride);
  const Vec taps = normals(tag + " w", count * n);
  const int64_t capacity = needle_rt::taps_capacity(count, stride, rollback);
  auto input = [&](const std::string &run, int64_t t) { return normals(tag + run + std::to_string(t), n); };
  for (int64_t back = 1; back <= rollback; ++back) {
    Vec rolled(needle_rt::taps_state_floats(n, count, stride, rollback), 1e30f), fresh(rolled), got(n), want(n);
    for (int64_t t = 0; t < fed; ++t)
      needle_rt::causal_taps(input(" x", t).data(), n, taps.data(), count, stride, capacity, rolled.data(), t,
                             got.data());
    for (int64_t t = 0; t < fed - back; ++t)
      needle_rt::causal_taps(input(" x", t).data(), n, taps.data(), count, stride, capacity, fresh.data(), t,
                             want.data());
    for (int64_t t = fed - back; t < fed + stride * count; ++t) {
      const Vec y = input(" y", t);
      needle_rt::causal_taps(y.data(), n, taps.data(), count, stride, capacity, rolled.data(), t, got.data());
      needle_rt::causal_taps(y.data(), n, taps.data(), count, stride, capacity, fresh.data(), t, want.data());
      EXPECT_EQ(got, want) << tag << " back=" << back << " t=" << t;
    }
  }
}

TEST(RuntimeTaps, CausalTapsStride1Count3) { checkTaps(3, 1, false); }
TEST(RuntimeTaps, CausalTapsStride3Count4) { checkTaps(4, 3, false); } // engram value taps, δ = 3
TEST(RuntimeTaps, CausalTapsInPlace) {
  checkTaps(3, 1, true);
  checkTaps(4, 2, true);
}
TEST(RuntimeTaps, CausalTapsCount1And2) {
  checkTaps(1, 1, false);
  checkTaps(2, 1, false);
  checkTaps(2, 3, true);
}
TEST(RuntimeTaps, CausalTapsWithSpareSlots) {
  checkTaps(3, 1, true, 2);
  checkTaps(4, 3, false, 5);
  checkTaps(2, 1, true, 1);
}
TEST(RuntimeTaps, CausalTapsGoBack) {
  checkTapsRollback(3, 1, 3);
  checkTapsRollback(4, 3, 4);
  checkTapsRollback(2, 1, 1);
}

} // namespace
