// The runtime's kernels of the residual lanes (runtime/kernels/lanes.h, runtime/arch/x86_64/lanes_avx2.h), against the
// reference (RuntimeTestSupport.h says how).
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

ref::Lanes toLanes(const Vec &v) {
  const size_t d = v.size() / 4;
  ref::Lanes lanes;
  for (size_t l = 0; l < 4; ++l)
    lanes[l].assign(v.begin() + l * d, v.begin() + (l + 1) * d);
  return lanes;
}

Vec fromLanes(const ref::Lanes &lanes) {
  Vec v;
  for (const Vec &lane : lanes)
    v.insert(v.end(), lane.begin(), lane.end());
  return v;
}

TEST(RuntimeLanes, LaneNorm) {
  const int64_t d = 96;
  const Vec lanes = normals("lane norm", 4 * d, 2.0);
  Vec got(4 * d);
  needle_rt::lane_norm(lanes.data(), d, 1e-6f, got.data());
  expectClose(got, ref::laneNorm(toLanes(lanes), 1e-6f), 1e-5, "lane_norm");
}

TEST(RuntimeLanes, MhcGatesIncludingSinkhorn) {
  for (int64_t position : {0, 1, 2, 3, 6}) {
    const std::string tag = "mhc " + std::to_string(position);
    // Projections of the size a 4D-wide unit vector gives, so the Sinkhorn logits spread widely.
    const Vec pre = normals(tag + " pre", 4, 3.0), post = normals(tag + " post", 4, 3.0);
    const Vec res = normals(tag + " res", 16, 3.0), a = normals(tag + " a", 3, 1.0);
    const Vec bPre = normals(tag + " bpre", 4), bPost = normals(tag + " bpost", 4), bRes = normals(tag + " bres", 16);
    const ref::LaneMix want = ref::mhcGates(pre, post, res, a, bPre, bPost, bRes, position);
    float hPre[4], hPost[4], mix[16];
    needle_rt::mhc_gates(pre.data(), post.data(), res.data(), a.data(), bPre.data(), bPost.data(), bRes.data(),
                         position, hPre, hPost, mix);
    expectClose(hPre, want.pre, 1e-5, tag + " h_pre");
    expectClose(hPost, want.post, 1e-5, tag + " h_post");
    expectClose(mix, want.res, 1e-5, tag + " sinkhorn mix");
    for (int col = 0; col < 4; ++col) // the last half-round normalizes columns
      EXPECT_NEAR(mix[col] + mix[4 + col] + mix[8 + col] + mix[12 + col], 1.0f, 1e-5f);
  }
}

TEST(RuntimeLanes, SinkhornAlone) {
  for (double spread : {0.1, 1.0, 10.0}) {
    const Vec logits = normals("sinkhorn", 16, spread);
    std::array<float, 16> in;
    std::copy(logits.begin(), logits.end(), in.begin());
    const std::array<float, 16> want = ref::sinkhorn(in);
    needle_rt::sinkhorn4(in.data());
    expectClose(in, want, 1e-5, "sinkhorn spread " + std::to_string(spread));
  }
}

TEST(RuntimeLanes, LaneReadWriteMean) {
  const int64_t d = 80;
  const Vec lanes = normals("lanes", 4 * d), y = normals("y", d);
  ref::LaneMix mix;
  const Vec pre = normals("pre", 4), post = normals("post", 4), res = normals("res", 16, 0.5);
  std::copy(pre.begin(), pre.end(), mix.pre.begin());
  std::copy(post.begin(), post.end(), mix.post.begin());
  std::copy(res.begin(), res.end(), mix.res.begin());

  Vec u(d);
  needle_rt::lane_read(lanes.data(), d, mix.pre.data(), u.data());
  expectClose(u, ref::readLanes(mix, toLanes(lanes)), 1e-6, "lane_read");

  ref::Lanes written = toLanes(lanes);
  ref::writeLanes(mix, written, y);
  const Vec want = fromLanes(written);
  Vec out(4 * d);
  needle_rt::lane_write(lanes.data(), d, mix.post.data(), mix.res.data(), y.data(), out.data());
  expectClose(out, want, 1e-6, "lane_write");
  Vec inPlace = lanes;
  needle_rt::lane_write(inPlace.data(), d, mix.post.data(), mix.res.data(), y.data(), inPlace.data());
  expectClose(inPlace, want, 1e-6, "lane_write in place");

  Vec mean(d);
  needle_rt::lane_mean(lanes.data(), d, mean.data());
  expectClose(mean, ref::meanOfLanes(toLanes(lanes)), 1e-6, "lane_mean");
}

const bool kChecksEveryMhcGates = checksEveryKernelOf("mhc_gates");

using MhcGatesKernel = decltype(&needle_rt::mhc_gates);

// Every registered mixing-gates kernel this CPU runs (the portable one; AVX2, with sinkhorn4_avx2)
// against the portable gates, on logits of several spreads (a spread of 40 makes most of e^x
// vanish, the case the max shift is for).
void checkMhcGates(MhcGatesKernel kernel) {
  for (float spread : {0.1f, 1.0f, 5.0f, 40.0f}) {
    const Vec pre = normals("pre", 4), post = normals("post", 4), res = normals("res", 16, spread),
              a = {0.7f, 1.3f, 1.0f}, bPre = normals("bpre", 4), bPost = normals("bpost", 4),
              bRes = normals("bres", 16);
    for (int64_t position : {0, 5}) {
      Vec hPre(4), hPost(4), mix(16), wantPre(4), wantPost(4), wantMix(16);
      kernel(pre.data(), post.data(), res.data(), a.data(), bPre.data(), bPost.data(), bRes.data(), position,
             hPre.data(), hPost.data(), mix.data());
      needle_rt::mhc_gates_with(pre.data(), post.data(), res.data(), a.data(), bPre.data(), bPost.data(), bRes.data(),
                                position, wantPre.data(), wantPost.data(), wantMix.data(), needle_rt::sinkhorn4);
      const std::string what = "spread " + std::to_string(spread) + " position " + std::to_string(position);
      expectClose(hPre, wantPre, 1e-6, what + " h_pre"); // the AVX2 build may fuse a·pre + b
      expectClose(hPost, wantPost, 1e-6, what + " h_post");
      expectClose(mix, wantMix, 1e-5, what + " mix");
      for (int c = 0; c < 4; ++c) // the result's columns sum to 1
        EXPECT_NEAR(mix[c] + mix[4 + c] + mix[8 + c] + mix[12 + c], 1.0f, 1e-5) << what << " column " << c;
    }
  }
  // A NaN or an infinity among the logits turns the whole matrix NaN in both.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Vec res(16, 0.5f), zeros(16, 0.0f), a = {1.0f, 1.0f, 1.0f}, gates(4, 0.0f), hPre(4), hPost(4), mix(16), want(16);
    res[6] = bad;
    kernel(gates.data(), gates.data(), res.data(), a.data(), gates.data(), gates.data(), zeros.data(), 0, hPre.data(),
           hPost.data(), mix.data());
    needle_rt::mhc_gates_with(gates.data(), gates.data(), res.data(), a.data(), gates.data(), gates.data(),
                              zeros.data(), 0, hPre.data(), hPost.data(), want.data(), needle_rt::sinkhorn4);
    for (int i = 0; i < 16; ++i)
      EXPECT_TRUE(std::isnan(mix[i]) && std::isnan(want[i])) << "mix " << i << " with " << bad << ": " << mix[i];
  }
}

TEST(RuntimeLanes, EveryRegisteredMhcGates) {
  for (const auto &[info, kernel] : registeredKernels<MhcGatesKernel>("mhc_gates")) {
    SCOPED_TRACE(std::string(info->name));
    checkMhcGates(kernel);
  }
}

} // namespace
