// The runtime's kernels of what follows attention: the gates, the block update and the Kronecker MLP
// (runtime/kernels/mlp.h, runtime/arch/x86_64/mlp_*.h, math_avx2.h), against the reference (RuntimeTestSupport.h says
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

TEST(RuntimeMlp, SigmoidResidualGateAndBlockUpdate) {
  const int64_t D = 192;
  const Vec o = normals("o", D), gate = normals("gate", D, 4.0), x = normals("x", D), a = normals("a", D, 0.01);
  const Vec norm = normals("norm", D, 0.2), mlp = normals("mlp", D), u = normals("u", D);
  Vec got(D);
  needle_rt::sigmoid_gate(o.data(), gate.data(), D, got.data());
  expectClose(got, ref::sigmoidGate(o, gate), 1e-6, "sigmoid_gate");
  for (float g : {-3.0f, 0.0f, 2.5f}) {
    needle_rt::residual_gate(x.data(), a.data(), norm.data(), g, D, 1e-6f, got.data());
    expectClose(got, ref::residualGate(x, a, norm, g, 1e-6f), 1e-5, "residual_gate g=" + std::to_string(g));
  }
  needle_rt::block_update(x.data(), mlp.data(), u.data(), D, got.data());
  expectClose(got, ref::blockUpdate(x, mlp, u), 1e-6, "block_update");
}

std::vector<int32_t> shuffled(int64_t n, uint32_t seed) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) { // Fisher-Yates with a fixed LCG: the same on every platform
    seed = seed * 1664525u + 1013904223u;
    std::swap(p[i], p[seed % (i + 1)]);
  }
  return p;
}

using KronMlpKernel = void (*)(const needle_rt::KronMlp &, const float *, float, float *, float *);

/// A Kronecker MLP of d_model D and factors ba x ba, bb x bb on random weights, and an input.
struct KronMlpCase {
  std::string tag;
  ref::MlpWeights mlp;
  Vec x1;

  KronMlpCase(int64_t D, int64_t ba, int64_t bb)
      : tag("kron_mlp D=" + std::to_string(D) + " n=" + std::to_string(ba * bb)) {
    const int64_t n = ba * bb;
    mlp.rows = ba, mlp.cols = bb;
    mlp.norm = normals(tag + " norm", D, 0.2);
    // Kronecker factors near orthogonal scale (1/sqrt(side)), so activations stay O(1).
    mlp.w1a = normals(tag + " w1a", ba * ba, 1.0 / std::sqrt(ba));
    mlp.w2a = normals(tag + " w2a", ba * ba, 1.0 / std::sqrt(ba));
    mlp.w3a = normals(tag + " w3a", ba * ba, 1.0 / std::sqrt(ba));
    mlp.w1b = normals(tag + " w1b", bb * bb, 1.0 / std::sqrt(bb));
    mlp.w2b = normals(tag + " w2b", bb * bb, 1.0 / std::sqrt(bb));
    mlp.w3b = normals(tag + " w3b", bb * bb, 1.0 / std::sqrt(bb));
    mlp.d1 = normals(tag + " d1", n), mlp.d2 = normals(tag + " d2", n), mlp.b2 = normals(tag + " b2", n);
    mlp.d3 = normals(tag + " d3", n), mlp.d4 = normals(tag + " d4", n);
    mlp.condV = normals(tag + " cond_v", D * 8, 0.1), mlp.condU = normals(tag + " cond_u", 8 * n, 0.5);
    mlp.p1 = shuffled(n, 11), mlp.p2 = shuffled(n, 13);
    x1 = normals(tag + " x1", D, 3.0);
  }

  /// The runtime's view of the weights.
  needle_rt::KronMlp weights() const {
    needle_rt::KronMlp w{};
    w.d_model = static_cast<int64_t>(x1.size()), w.n = mlp.rows * mlp.cols, w.ba = mlp.rows, w.bb = mlp.cols;
    w.norm = mlp.norm.data();
    w.w1a = mlp.w1a.data(), w.w2a = mlp.w2a.data(), w.w3a = mlp.w3a.data();
    w.w1b = mlp.w1b.data(), w.w2b = mlp.w2b.data(), w.w3b = mlp.w3b.data();
    w.d1 = mlp.d1.data(), w.d2 = mlp.d2.data(), w.b2 = mlp.b2.data(), w.d3 = mlp.d3.data(), w.d4 = mlp.d4.data();
    w.cond_v = mlp.condV.data(), w.cond_u = mlp.condU.data(), w.p1 = mlp.p1.data(), w.p2 = mlp.p2.data();
    return w;
  }

  /// `kernel`'s output.
  Vec run(KronMlpKernel kernel) const {
    Vec scratch(needle_rt::kron_mlp_scratch_floats(mlp.rows * mlp.cols), 1e30f), got(x1.size());
    kernel(weights(), x1.data(), 1e-6f, scratch.data(), got.data());
    return got;
  }
};

void checkKronMlp(int64_t D, int64_t ba, int64_t bb, KronMlpKernel kernel = needle_rt::kron_mlp) {
  const KronMlpCase c(D, ba, bb);
  const Vec want = ref::kronMlp(c.mlp, c.x1, 1e-6f);
  // Three chained f32 Kronecker products (each two matmuls) against double: 1e-5 still holds.
  expectClose(c.run(kernel), want, 1e-5, c.tag);
  Vec scratch(needle_rt::kron_mlp_scratch_floats(ba * bb), 1e30f), inPlace = c.x1;
  kernel(c.weights(), inPlace.data(), 1e-6f, scratch.data(), inPlace.data());
  expectClose(inPlace, want, 1e-5, c.tag + " in place");
}

TEST(RuntimeMlp, KroneckerAlone) {
  const int64_t ba = 4, bb = 8;
  const Vec z = normals("kz", ba * bb), wa = normals("kwa", ba * ba), wb = normals("kwb", bb * bb);
  Vec tmp(ba * bb), got(ba * bb);
  needle_rt::kronecker(z.data(), wa.data(), wb.data(), ba, bb, tmp.data(), got.data());
  expectClose(got, ref::kronecker(z, wa, wb, ba, bb), 1e-5, "kronecker");
}

TEST(RuntimeMlp, KronMlpPadded) { checkKronMlp(24, 4, 8); } // n = 32 > D: padding and [:D]
TEST(RuntimeMlp, KronMlpSquare) { checkKronMlp(64, 8, 8); }
TEST(RuntimeMlp, KronMlpNeedleShape) { checkKronMlp(768, 32, 32); }

const bool kChecksEveryKronMlp = checksEveryKernelOf("kron_mlp_flat");

using KronMlpFlatKernel = decltype(&needle_rt::kron_mlp_flat_on<needle_rt::kron_mlp>);

/// `kernel` (kron_mlp_flat's signature: the weights as separate arguments) on c's weights.
void runFlat(KronMlpFlatKernel kernel, const KronMlpCase &c, const float *x1, float *out) {
  const needle_rt::KronMlp w = c.weights();
  Vec scratch(needle_rt::kron_mlp_scratch_floats(w.n), 1e30f);
  kernel(w.d_model, w.n, w.ba, w.bb, w.norm, w.w1a, w.w2a, w.w3a, w.w1b, w.w2b, w.w3b, w.d1, w.d2, w.b2, w.d3, w.d4,
         w.cond_v, w.cond_u, w.p1, w.p2, x1, 1e-6f, scratch.data(), out);
}

// Every registered Kronecker MLP this CPU runs (the portable one, AVX2, AVX-512) against the
// reference, and in place: needle3's shape, n > D, the tiny preset's, and one the vector kernels
// leave to the portable Kronecker (silu 8 at a time).
TEST(RuntimeMlp, EveryRegisteredKronMlp) {
  for (const auto &[info, kernel] : registeredKernels<KronMlpFlatKernel>("kron_mlp_flat"))
    for (const auto &[d, ba, bb] :
         {std::tuple<int64_t, int64_t, int64_t>{768, 32, 32}, {90, 3, 32}, {128, 8, 16}, {24, 4, 8}}) {
      const KronMlpCase c(d, ba, bb);
      const std::string what = std::string(info->name) + " " + c.tag;
      const Vec want = ref::kronMlp(c.mlp, c.x1, 1e-6f);
      Vec got(c.x1.size()), inPlace = c.x1;
      runFlat(kernel, c, c.x1.data(), got.data());
      expectClose(got, want, 1e-5, what);
      runFlat(kernel, c, inPlace.data(), inPlace.data());
      expectClose(inPlace, want, 1e-5, what + " in place");
    }
}

const bool kChecksEverySigmoidGate = checksEveryKernelOf("sigmoid_gate");

// Every registered sigmoid gate this CPU runs (the portable one, AVX2): σ's two branches and its
// saturation, a NaN gate, and a tail past a multiple of 8.
TEST(RuntimeMlp, EveryRegisteredSigmoidGate) {
  Vec gate;
  for (double v = -120; v <= 120; v += 0.37)
    gate.push_back(static_cast<float>(v));
  gate.push_back(-1e30f), gate.push_back(1e30f), gate.push_back(-std::numeric_limits<float>::infinity());
  gate.push_back(std::numeric_limits<float>::quiet_NaN());
  const Vec x = normals("gated", static_cast<int64_t>(gate.size()));
  for (const auto &[info, kernel] : registeredKernels<decltype(&needle_rt::sigmoid_gate)>("sigmoid_gate")) {
    SCOPED_TRACE(std::string(info->name));
    Vec got(x.size());
    kernel(x.data(), gate.data(), static_cast<int64_t>(x.size()), got.data());
    for (size_t i = 0; i + 1 < x.size(); ++i) {
      const double want = x[i] / (1 + std::exp(-static_cast<double>(gate[i])));
      EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "gate " << gate[i];
    }
    EXPECT_TRUE(std::isnan(got.back())) << "a NaN gate gives NaN (the scalar tail)";
    Vec nans(8, std::numeric_limits<float>::quiet_NaN()), out(8);
    kernel(x.data(), nans.data(), 8, out.data());
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[7])) << "NaN gates 8 at a time give NaN";
  }
}

#if NEEDLE_RT_X86_KERNELS
using KroneckerKernel = decltype(&needle_rt::kronecker_avx2);

/// `kernel` against the reference: factor widths of 1, 2 and 4 runs of 16 columns; rows in
/// fours and eights with some left over; a width the vector kernels leave to the portable one.
void checkKronecker(KroneckerKernel kernel, const std::string &name) {
  for (auto [ba, bb] :
       {std::pair<int64_t, int64_t>{32, 32}, {8, 16}, {3, 64}, {6, 32}, {5, 32}, {1, 16}, {4, 8}, {11, 48}, {13, 32}}) {
    const std::string tag = name + " " + std::to_string(ba) + "x" + std::to_string(bb);
    const Vec z = normals(tag + " z", ba * bb), wa = normals(tag + " wa", ba * ba), wb = normals(tag + " wb", bb * bb);
    Vec tmp(ba * bb, 1e30f), got(ba * bb, 1e30f);
    kernel(z.data(), wa.data(), wb.data(), ba, bb, tmp.data(), got.data());
    const Vec want = ref::kronecker(z, wa, wb, ba, bb);
    expectClose(got, want, 1e-5, tag);
    Vec inPlace = z; // out may be z
    kernel(inPlace.data(), wa.data(), wb.data(), ba, bb, tmp.data(), inPlace.data());
    expectClose(inPlace, want, 1e-5, tag + " in place");
  }
}

TEST(RuntimeMlp, KroneckerAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  checkKronecker(needle_rt::kronecker_avx2, "kronecker_avx2");
}

TEST(RuntimeMlp, KroneckerAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  checkKronecker(needle_rt::kronecker_avx512, "kronecker_avx512");
}

TEST(RuntimeMlp, SiluAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  // Both branches of σ, its extremes (e^-|x| clamped, saturated), and a tail past a multiple of 8.
  Vec x;
  for (double v = -120; v <= 120; v += 0.37)
    x.push_back(static_cast<float>(v));
  x.push_back(0.0f), x.push_back(-0.0f), x.push_back(1e-30f), x.push_back(-1e-30f);
  x.push_back(-1e30f), x.push_back(-1e38f); // past avx2_exp's clamp: silu is -0, not x·e^-87.3
  x.push_back(std::numeric_limits<float>::infinity());
  Vec got = x;
  needle_rt::silu_in_place_avx2(got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = x[i] / (1 + std::exp(-static_cast<double>(x[i])));
    if (std::isinf(want))
      EXPECT_EQ(got[i], want) << "silu(" << x[i] << ")";
    else
      EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "silu(" << x[i] << ")";
  }
  float nan = std::numeric_limits<float>::quiet_NaN();
  needle_rt::silu_in_place_avx2(&nan, 1); // the scalar tail
  Vec nans(8, std::numeric_limits<float>::quiet_NaN());
  needle_rt::silu_in_place_avx2(nans.data(), 8);
  EXPECT_TRUE(std::isnan(nan) && std::isnan(nans[0]) && std::isnan(nans[7])) << "silu(NaN) stays NaN";
}

/// needle_rt::avx2_log of 8 floats (the intrinsics need the AVX2 target this function has).
NEEDLE_RT_AVX2 void logAvx2(const float *x, float *out) {
  _mm256_storeu_ps(out, needle_rt::avx2_log(_mm256_loadu_ps(x)));
}

TEST(RuntimeMlp, LogAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  // Both sides of the range split at sqrt(1/2), powers of 2, the sums Sinkhorn takes (1..4), and
  // the normal range's ends.
  Vec x = {1.0f,
           2.0f,
           4.0f,
           0.5f,
           0.70710677f,
           0.70710683f,
           1.4142135f,
           3.999999f,
           std::numeric_limits<float>::min(),
           std::numeric_limits<float>::max()};
  for (double v = 1; v <= 4; v += 0.0173)
    x.push_back(static_cast<float>(v));
  for (double v = 1e-37; v < 1e37; v *= 3.7)
    x.push_back(static_cast<float>(v));
  while (x.size() % 8 != 0)
    x.push_back(1.5f);
  for (size_t i = 0; i < x.size(); i += 8) {
    float got[8];
    logAvx2(x.data() + i, got);
    for (size_t j = 0; j < 8; ++j) {
      const double want = std::log(static_cast<double>(x[i + j]));
      EXPECT_NEAR(got[j], want, 2.5e-7 * std::max(1.0, std::fabs(want))) << "ln " << x[i + j];
    }
  }
}

/// kron_mlp_avx512 sums as kron_mlp_avx2 does, only 16 lanes at a time: the same floats, on
/// needle3's shape (32-column runs), the tiny preset's (16) and one left to the portable kernel.
TEST(RuntimeMlp, KronMlpAvx512EqualsAvx2) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  checkKronMlp(768, 32, 32, needle_rt::kron_mlp_avx512);
  for (const auto &[d, ba, bb] : {std::tuple<int64_t, int64_t, int64_t>{768, 32, 32}, {128, 8, 16}, {24, 4, 8}}) {
    const KronMlpCase c(d, ba, bb);
    expectBitEqual(c.run(needle_rt::kron_mlp_avx512), c.run(needle_rt::kron_mlp_avx2), c.tag);
  }
}
#endif

} // namespace
