// The runtime's kernels of attention (runtime/kernels/attention.h, runtime/arch/x86_64/attention_*.h), against the
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

using AttentionKernel = decltype(&needle_rt::attention);

struct AttentionShape {
  int64_t heads, kvHeads, dqk, dv;
};

void checkAttention(AttentionKernel kernel, AttentionShape shape, int64_t window, int64_t capacity, int64_t positions,
                    double qkScale = 2.0, double tolerance = 1e-5) {
  const auto [heads, kvHeads, dqk, dv] = shape;
  const std::string tag = "attention heads=" + std::to_string(heads) + "/" + std::to_string(kvHeads) +
                          " dqk=" + std::to_string(dqk) + " dv=" + std::to_string(dv) +
                          " window=" + std::to_string(window) + " capacity=" + std::to_string(capacity);
  Vec kCache(capacity * kvHeads * dqk, 1e30f), vCache(capacity * kvHeads * dv, 1e30f);
  Vec scores(needle_rt::attention_scratch_floats(capacity, heads, kvHeads));
  std::vector<Vec> keys, values;
  for (int64_t t = 0; t < positions; ++t) {
    const std::string at = tag + " t=" + std::to_string(t);
    const Vec q = normals(at + " q", heads * dqk, qkScale);
    keys.push_back(normals(at + " k", kvHeads * dqk, qkScale));
    values.push_back(normals(at + " v", kvHeads * dv));
    const Vec want = ref::attend(q, keys, values, ref::firstVisible(window, t), t, heads, kvHeads);
    Vec got(heads * dv);
    kernel(q.data(), keys.back().data(), values.back().data(), heads, kvHeads, dqk, dv, window, capacity, t,
           kCache.data(), vCache.data(), scores.data(), got.data());
    expectClose(got, want, tolerance, at);
  }
}

/// The shapes both kernels must serve: rings that wrap, windows shorter than their rings, one
/// kv head for all, one per query head, and extreme scores.
void checkAttentionCases(AttentionKernel kernel) {
  checkAttention(kernel, {4, 2, 8, 6}, 8, 8, 20);
  checkAttention(kernel, {4, 1, 8, 6}, 5, 7, 20);
  checkAttention(kernel, {6, 2, 8, 6}, 0, 20, 20);
  checkAttention(kernel, {3, 3, 8, 6}, 4, 4, 12);
  // Scores of order ±1000: e^score overflows f32 unless the max is subtracted first.
  checkAttention(kernel, {4, 2, 8, 6}, 6, 6, 12, 30.0);
}

/// Shapes for the x86 kernels' blocks: dv a multiple of 8, spans of 32 slots and more, with
/// tails of 8 and of single slots; query heads 6 at once (AVX-512), in pairs and odd groups
/// (a pair and a single), and groups of 8 and 9 (6 + 2, 6 + 2 + 1).
void checkAttentionVectorCases(AttentionKernel kernel) {
  checkAttention(kernel, {12, 2, 48, 64}, 45, 45, 100); // needle3's heads; a ring of 45 wraps
  checkAttention(kernel, {16, 2, 8, 16}, 0, 70, 70);    // groups of 8
  checkAttention(kernel, {9, 1, 8, 32}, 20, 30, 60);    // a group of 9
  checkAttention(kernel, {3, 1, 16, 24}, 0, 80, 80);    // a group of 3; dv 24: single vectors
  checkAttention(kernel, {2, 2, 8, 16}, 33, 40, 90);    // one head per kv head, window < ring
  checkAttention(kernel, {4, 2, 16, 40}, 0, 50, 50);    // dv 40: a 32-wide block, then an 8-wide one
  // Scores of order ±1000 through the vector softmax and exp. f32 scores that large are off by
  // ~1e-4 absolute, and so are their weights (relative), for either kernel.
  checkAttention(kernel, {4, 2, 8, 8}, 6, 6, 12, 30.0, 1e-4);
  checkAttention(kernel, {4, 2, 8, 8}, 0, 40, 40, 30.0, 1e-4);
  checkAttention(kernel, {4, 2, 8, 80}, 0, 150, 150); // dv 80: with 16 lanes, a 64-wide block, then 16
  // Scores of order ±1000 through a 16-lane softmax and exp (dv 16: whole 16-lane vectors).
  checkAttention(kernel, {12, 2, 8, 16}, 0, 60, 60, 30.0, 1e-4);
}

const bool kChecksEveryAttention = checksEveryKernelOf("attention");

// Every registered attention kernel this CPU runs (the portable one, AVX2, AVX-512): the x86
// ones take dv 6 to attention_read.
TEST(RuntimeAttention, EveryRegisteredKernel) {
  for (const auto &[info, kernel] : registeredKernels<AttentionKernel>("attention")) {
    SCOPED_TRACE(std::string(info->name));
    checkAttentionCases(kernel);
    checkAttentionVectorCases(kernel);
  }
}

#if NEEDLE_RT_X86_KERNELS
/// needle_rt::avx2_exp on 8 floats.
NEEDLE_RT_AVX2 void avx2Exp(const float *x, float *out) {
  _mm256_storeu_ps(out, needle_rt::avx2_exp(_mm256_loadu_ps(x)));
}

TEST(RuntimeAttention, Avx2ExpWithin2ToTheMinus22OfStdExp) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  // Every 1/1024 from -87 to 0.
  for (int i = -87 * 1024; i <= 0; i += 8) {
    float x[8], got[8];
    for (int j = 0; j < 8; ++j)
      x[j] = static_cast<float>(i + j > 0 ? 0 : i + j) / 1024.0f;
    avx2Exp(x, got);
    for (int j = 0; j < 8; ++j) {
      const double want = std::exp(static_cast<double>(x[j]));
      ASSERT_LE(std::abs(got[j] - want), 2.0 * std::numeric_limits<float>::epsilon() * want) << "x=" << x[j];
    }
  }
  // The edges: e^0 is 1; below -87.3 (e^-1000, e^-inf) the result stays e^-87.3, not NaN or inf.
  const float edges[8] = {0, -1000, -INFINITY, -87.3f, -88, -1, -0.5f, -2};
  float got[8];
  avx2Exp(edges, got);
  EXPECT_EQ(got[0], 1.0f);
  for (int j : {1, 2, 4}) {
    EXPECT_GE(got[j], 0.0f) << edges[j];
    EXPECT_LE(got[j], 1.3e-38f) << edges[j];
  }
}

/// needle_rt::avx512_exp on 16 floats.
NEEDLE_RT_AVX512 void avx512Exp(const float *x, float *out) {
  _mm512_storeu_ps(out, needle_rt::avx512_exp(_mm512_loadu_ps(x)));
}

/// avx512_exp does avx2_exp's operations 16 lanes at a time: the same floats, the edges too.
TEST(RuntimeAttention, Avx512ExpEqualsAvx2Exp) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  Vec x;
  for (int i = -90 * 1024; i <= 0; i += 3) // every 3/1024 from -90 to 0
    x.push_back(static_cast<float>(i) / 1024.0f);
  for (float edge : {-1000.0f, -INFINITY, -87.3f, -0.0f, NAN, 1e-30f, -1e-30f})
    x.push_back(edge);
  x.resize((x.size() + 15) / 16 * 16, 0.0f);
  Vec got(x.size()), want(x.size());
  for (size_t i = 0; i < x.size(); i += 16) {
    avx512Exp(x.data() + i, got.data() + i);
    avx2Exp(x.data() + i, want.data() + i);
    avx2Exp(x.data() + i + 8, want.data() + i + 8);
  }
  expectBitEqual(got, want, "avx512_exp");
}

/// attention_avx512 sums as attention_avx2 does, only 16 lanes at a time: the same floats.
TEST(RuntimeAttention, AttentionAvx512EqualsAvx2) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  for (const auto &[shape, window, capacity] :
       {std::tuple{AttentionShape{12, 2, 48, 64}, int64_t{0}, int64_t{150}},   // spans of 64s, 16s and a tail
        std::tuple{AttentionShape{9, 1, 16, 32}, int64_t{0}, int64_t{120}},    // 6 heads, a pair and one
        std::tuple{AttentionShape{3, 1, 16, 32}, int64_t{37}, int64_t{40}}}) { // a pair and one; a wrapping ring
    const auto [heads, kvHeads, dqk, dv] = shape;
    Vec kCache2(capacity * kvHeads * dqk), vCache2(capacity * kvHeads * dv), kCache16 = kCache2, vCache16 = vCache2;
    Vec scores(needle_rt::attention_scratch_floats(capacity, heads, kvHeads)), got2(heads * dv), got16(heads * dv);
    for (int64_t t = 0; t < 120; ++t) {
      const std::string at = "attention t=" + std::to_string(t) + " dv=" + std::to_string(dv);
      const Vec q = normals(at + " q", heads * dqk), k = normals(at + " k", kvHeads * dqk),
                v = normals(at + " v", kvHeads * dv);
      needle_rt::attention_avx2(q.data(), k.data(), v.data(), heads, kvHeads, dqk, dv, window, capacity, t,
                                kCache2.data(), vCache2.data(), scores.data(), got2.data());
      needle_rt::attention_avx512(q.data(), k.data(), v.data(), heads, kvHeads, dqk, dv, window, capacity, t,
                                  kCache16.data(), vCache16.data(), scores.data(), got16.data());
      expectBitEqual(got16, got2, at);
    }
  }
}
#endif

} // namespace
