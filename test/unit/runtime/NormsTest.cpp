// The runtime's kernels of norms and RoPE (runtime/kernels/norms.h, the entry points' rope_into), against the reference
// (RuntimeTestSupport.h says how).
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

TEST(RuntimeNorms, ZcNormWholeVectorAndPerHead) {
  const float eps = 1e-6f;
  for (int64_t heads : {1, 4}) {
    const int64_t d = 48, n = heads * d;
    const Vec x = normals("zc x", n, 3.0), s = normals("zc s", d, 0.3);
    Vec want;
    for (int64_t h = 0; h < heads; ++h) {
      const Vec part = ref::zc(std::span(x).subspan(h * d, d), s, eps);
      want.insert(want.end(), part.begin(), part.end());
    }
    Vec got(n);
    needle_rt::zc_norm(x.data(), s.data(), n, heads, eps, got.data());
    expectClose(got, want, 1e-5, "zc_norm heads=" + std::to_string(heads));
    Vec inPlace = x;
    needle_rt::zc_norm(inPlace.data(), s.data(), n, heads, eps, inPlace.data());
    expectClose(inPlace, want, 1e-5, "zc_norm in place heads=" + std::to_string(heads));
  }
  // A null scale is unit(); a tiny vector is dominated by eps.
  for (double stddev : {1.0, 1e-5}) {
    const Vec x = normals("unit", 96, stddev);
    Vec got(96);
    needle_rt::zc_norm(x.data(), nullptr, 96, 1, eps, got.data());
    expectClose(got, ref::unit(x, eps), 1e-5, "zc_norm null scale, stddev " + std::to_string(stddev));
    needle_rt::unit_norm(x.data(), 96, eps, got.data());
    expectClose(got, ref::unit(x, eps), 1e-5, "unit_norm, stddev " + std::to_string(stddev));
  }
}

TEST(RuntimeNorms, RopeMatchesTheReferenceAtAnyPosition) {
  const int64_t heads = 3, d = 48;
  for (double theta : {100000.0, 10000.0})
    for (int64_t t : {0, 1, 7, 1000, 8191, 100000}) {
      const Vec x = normals("rope", heads * d);
      Vec want = x, got = x;
      for (int64_t h = 0; h < heads; ++h)
        ref::rope(std::span(want).subspan(h * d, d), t, theta);
      needle_rt::rope(got.data(), heads, d, t, theta);
      expectClose(got, want, 1e-6, "rope t=" + std::to_string(t) + " theta=" + std::to_string(theta));
    }
}

} // namespace
