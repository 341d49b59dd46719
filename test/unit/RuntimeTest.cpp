// The portable runtime kernels (runtime/needle_runtime.h) against the reference interpreter's own
// function for each (compiler/Reference, compiler/Quant), on random inputs.
//
// Tolerances: a vector is compared by its error relative to its largest expected value,
// max_i |got_i − want_i| / max_i |want_i|, so cancellation in one element does not fail a
// correct kernel. The runtime accumulates in f32 and the reference in double, so a single
// kernel is held to 1e-5 (or bit equality where both do the same f32 operations); longer
// chains say why they need more. A CQ matvec's row is held to 1e-5 of its terms' magnitudes
// (expectWithinSumOrderBound), as a one-row matrix's can cancel to a thousandth of them. NEEDLE_RUNTIME_TEST_VERBOSE=1
// prints every measured error.
#include "needle_runtime.h"

#include "Model/Synth.h"
#include "Quant/Cq.h"
#include "Reference/Block.h"
#include "Reference/Heads.h"
#include "Reference/Kernels.h"
#include "Support/Half.h"
#include "codegen/Select/WeightLayouts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

using namespace needle;
namespace ref = needle::reference;
using Vec = std::vector<float>;

namespace {

Vec normals(const std::string &name, int64_t count, double stddev = 1.0) {
  return randomNormals(20261129, name, count, stddev);
}

/// max |got − want| / max |want|; NaN when any value is NaN (std::max would drop it).
double relativeError(std::span<const float> got, std::span<const float> want) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double difference = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(difference <= error))
      error = difference;
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return scale > 0 ? error / scale : error;
}

void expectClose(std::span<const float> got, std::span<const float> want, double tolerance, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double error = relativeError(got, want);
  if (std::getenv("NEEDLE_RUNTIME_TEST_VERBOSE"))
    std::printf("  [measured] %-60s %.3g (tolerance %.0g)\n", what.c_str(), error, tolerance);
  EXPECT_LE(error, tolerance) << what;
}

void expectClose(float got, float want, double tolerance, const std::string &what) {
  expectClose(std::span(&got, 1), std::span(&want, 1), tolerance, what);
}

void expectBitEqual(std::span<const float> got, std::span<const float> want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << what << " at " << i;
}

// ---- Scalars, rotation, CQ ----

TEST(Runtime, HalfToFloatIsExactOnEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float got = needle_rt::half_to_float(static_cast<uint16_t>(h));
    const float want = halfToFloat(static_cast<uint16_t>(h));
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(needle_rt::half_to_float(0x0001), 0x1p-24f); // smallest subnormal
  EXPECT_EQ(needle_rt::half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(needle_rt::half_to_float(0xFBFF), -65504.0f);
}

TEST(Runtime, FwhtIsBitIdenticalToCq) {
  for (int64_t n : {1, 2, 16, 128}) {
    Vec x = normals("fwht" + std::to_string(n), n), want = x;
    needle_rt::fwht(x.data(), n);
    cq::fwht(want.data(), n);
    expectBitEqual(x, want, "fwht n=" + std::to_string(n));
  }
}

using HadamardKernel = decltype(&needle_rt::hadamard);

void checkHadamard(HadamardKernel kernel, const std::string &name) {
  for (int64_t n : {128, 200, 384, 5}) {
    const Vec in = normals("hadamard" + std::to_string(n), n);
    const int64_t padded = cq::paddedCols(n);
    Vec want(in);
    want.resize(padded, 0.0f);
    for (int64_t g = 0; g < padded; g += 128)
      cq::fwht(want.data() + g, 128);
    Vec got(padded, 7.0f); // garbage in the padding must be overwritten
    kernel(in.data(), n, 128, got.data());
    expectBitEqual(got, want, name + " n=" + std::to_string(n));
    Vec inPlace(in);
    inPlace.resize(padded, 7.0f);
    kernel(inPlace.data(), n, 128, inPlace.data());
    expectBitEqual(inPlace, want, name + " in place n=" + std::to_string(n));
  }
  // Groups of 4 (under a vector) and 16: each rotated as cq::fwht does.
  for (int64_t group : {4, 16}) {
    const Vec in = normals("hadamard group" + std::to_string(group), 3 * group);
    Vec want = in, got(in.size());
    for (int64_t g = 0; g < 3 * group; g += group)
      cq::fwht(want.data() + g, group);
    kernel(in.data(), 3 * group, group, got.data());
    expectBitEqual(got, want, name + " group=" + std::to_string(group));
  }
}

TEST(Runtime, HadamardPadsThenRotatesEachGroup) {
  checkHadamard(needle_rt::hadamard, "hadamard");
  checkHadamard(needle_rt::hadamard_portable, "hadamard_portable");
}

#if NEEDLE_RT_X86_KERNELS
bool hasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

bool hasAvx512() { return hasAvx2() && __builtin_cpu_supports("avx512f"); }

TEST(Runtime, FwhtAvx2IsBitIdenticalToCq) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  for (int64_t n : {8, 16, 32, 128, 1024}) {
    Vec x = normals("fwht avx2" + std::to_string(n), n), want = x;
    needle_rt::fwht_avx2(x.data(), n);
    cq::fwht(want.data(), n);
    expectBitEqual(x, want, "fwht_avx2 n=" + std::to_string(n));
  }
  checkHadamard(needle_rt::hadamard_avx2, "hadamard_avx2");
}

TEST(Runtime, HadamardAvx512IsBitIdenticalToCq) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  checkHadamard(needle_rt::hadamard_avx512, "hadamard_avx512"); // groups of 4 and 16: hadamard_avx2's
}
#endif

/// A CQ matrix made by the project's quantizer.
struct CqMatrix {
  int64_t rows, cols;
  int bits;
  Vec codebook;
  cq::Packed packed;
  Vec rotated; // [rows, padded]: the reference's decode in the rotated domain

  CqMatrix(const std::string &name, int64_t rows, int64_t cols, int bits,
           cq::CodebookKind kind = cq::CodebookKind::Needle)
      : rows(rows), cols(cols), bits(bits), codebook(cq::codebook(kind, bits)) {
    const Vec w = normals(name, rows * cols, 0.05);
    packed = cq::quantize(w, rows, cols, bits, codebook, name);
    rotated.resize(rows * cq::paddedCols(cols));
    cq::decodeRotatedRows(packed.indices.data(), packed.norms.data(), 0, rows, cols, bits, codebook, rotated.data());
  }
};

TEST(Runtime, CqGroupDecodeFollowsThePackedLayout) {
  const float identity[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; // c[i] = i
  for (int bits : {2, 3, 4}) {
    std::vector<uint8_t> indices(256);
    for (size_t i = 0; i < indices.size(); ++i)
      indices[i] = static_cast<uint8_t>((i * 11 + i / 5) % (1u << bits));
    std::vector<uint8_t> packed(indices.size() * bits / 8);
    cq::packIndices(indices, bits, packed.data());
    Vec decoded(indices.size());
    for (int64_t g = 0; g < 2; ++g)
      needle_rt::cq_group_decode(packed.data() + g * 16 * bits, bits, identity, decoded.data() + g * 128, 1);
    for (size_t k = 0; k < indices.size(); ++k)
      ASSERT_EQ(decoded[k], indices[k]) << bits << " bits, k=" << k;
  }
}

TEST(Runtime, CqRowIsBitIdenticalToDecodeRotatedRows) {
  for (int bits : {2, 3, 4})
    for (int64_t cols : {128, 200, 40, 384}) {
      const CqMatrix m("cqrow", 5, cols, bits);
      const int64_t padded = cq::paddedCols(cols);
      for (int64_t r = 0; r < m.rows; ++r) {
        Vec got(padded);
        needle_rt::cq_row(m.packed.indices.data(), m.packed.norms.data(), m.codebook.data(), bits, r, cols, got.data());
        expectBitEqual(got, std::span(m.rotated).subspan(r * padded, padded),
                       "cq_row bits=" + std::to_string(bits) + " cols=" + std::to_string(cols));
      }
    }
}

void checkCqMatvec(int bits, int64_t rows, int64_t cols, cq::CodebookKind kind = cq::CodebookKind::Needle) {
  const std::string what = "cq_matvec bits=" + std::to_string(bits) + " rows=" + std::to_string(rows) +
                           " cols=" + std::to_string(cols) + (kind == cq::CodebookKind::LloydMax ? " lloyd-max" : "");
  const CqMatrix m(what, rows, cols, bits, kind);
  // The input as the IR has it: rotated and padded by needle.hadamard.
  Vec x = normals(what + " x", cols);
  Vec xRot(cq::paddedCols(cols));
  needle_rt::hadamard(x.data(), cols, 128, xRot.data());
  const Vec want = ref::matvec(m.rotated, rows, xRot);
  Vec got(rows, 1e30f);
  needle_rt::cq_matvec(m.packed.indices.data(), m.packed.norms.data(), m.codebook.data(), bits, rows, cols, xRot.data(),
                       got.data());
  expectClose(got, want, 1e-5, what);
}

TEST(Runtime, CqMatvecAtEveryWidth) {
  for (int bits : {2, 3, 4}) {
    checkCqMatvec(bits, 64, 384); // whole groups
    checkCqMatvec(bits, 13, 200); // a partial last group, odd rows
    checkCqMatvec(bits, 7, 128);  // exactly one group
    checkCqMatvec(bits, 1, 40);   // one row, one mostly padded group
  }
  checkCqMatvec(3, 9, 1000, cq::CodebookKind::LloydMax);
}

using CqMatmulKernel = void (*)(const uint8_t *, const uint16_t *, const float *, int, int64_t, int64_t, const float *,
                                float *, int64_t, int64_t);

/// The layouts a CQ matmul kernel reads: the file's, and the four needlec re-lays CQ2 and CQ4
/// into (CqX8 CQ4 only, CqLutChunkMajor CQ2 only).
enum class CqLayout { File, CqX8, CqLut16, CqLutDword, CqLutChunkMajor };

/// How close a CQ matmul kernel must come to the reference: as float sums in another order, or
/// within the fast mode's bound (int8 tables).
enum class CqAccuracy { Float, Int8Tables };

/// `m`'s packed indices and norms in `layout`.
std::pair<std::vector<uint8_t>, std::vector<uint16_t>> relaid(const CqMatrix &m, CqLayout layout) {
  if (layout == CqLayout::File)
    return {m.packed.indices, m.packed.norms};
  const int64_t groups = cq::paddedCols(m.cols) / 128;
  const auto *norms = reinterpret_cast<const uint8_t *>(m.packed.norms.data());
  const uint8_t *indices = m.packed.indices.data();
  const std::vector<uint8_t> packed = layout == CqLayout::CqX8      ? interleaveCqX8(indices, m.rows, groups)
                                      : layout == CqLayout::CqLut16 ? tileCqLut16(indices, m.rows, groups, m.bits)
                                      : layout == CqLayout::CqLutChunkMajor
                                          ? tileCqLutChunkMajor(indices, m.rows, groups, m.bits)
                                          : tileCqLutDword(indices, m.rows, groups, m.bits);
  const std::vector<uint8_t> blocked = layout == CqLayout::CqX8              ? blockCqX8Norms(norms, m.rows, groups)
                                       : layout == CqLayout::CqLutChunkMajor ? chunkMajorNorms(norms, m.rows, groups)
                                                                             : blockCqLut16Norms(norms, m.rows, groups);
  std::vector<uint16_t> halves(blocked.size() / 2);
  std::memcpy(halves.data(), blocked.data(), blocked.size());
  return {packed, halves};
}

/// The fast mode's error bound for y = W x_rot (docs/targets.md, "The fast mode"): a group's
/// table entries (sums of 4/bits products c[k]·x) are rounded to multiples of scale = the
/// largest |entry| / 127, so each of a row's 32·bits lookups per group is off by at most
/// scale / 2: |error_r| <= Σ_g |n_rg| · scale_g / 2 · 32·bits (with 0.1% for the float sums).
Vec lutErrorBound(const CqMatrix &m, std::span<const float> xRot) {
  const int64_t groups = cq::paddedCols(m.cols) / 128, width = 4 / m.bits;
  Vec bound(m.rows, 0.0f);
  for (int64_t g = 0; g < groups; ++g) {
    double largest = 0;
    for (int64_t u = 0; u < 32 * m.bits; ++u)
      for (unsigned k = 0; k < 16; ++k) {
        double entry = 0;
        for (int64_t j = 0; j < width; ++j)
          entry += static_cast<double>(m.codebook[(k >> (m.bits * j)) & ((1u << m.bits) - 1u)]) *
                   xRot[g * 128 + u * width + j];
        largest = std::max(largest, std::fabs(entry));
      }
    for (int64_t r = 0; r < m.rows; ++r)
      bound[r] += static_cast<float>(std::fabs(needle_rt::half_to_float(m.packed.norms[r * groups + g])) * largest /
                                     127 * 0.5005 * 32 * m.bits);
  }
  return bound;
}

/// Every row within the fast mode's bound, and the rows' mean error well inside it: rounding
/// errors of independent entries mostly cancel (about a tenth of the bound on random inputs), so
/// a wrong scale or a misplaced code shows even where it stays under the worst case.
void expectWithinLutBound(std::span<const float> got, std::span<const float> want, std::span<const float> bound,
                          const std::string &what) {
  double share = 0;
  for (size_t r = 0; r < want.size(); ++r) {
    const double error = std::fabs(static_cast<double>(got[r]) - want[r]);
    ASSERT_LE(error, bound[r]) << what << " row " << r << ": got " << got[r] << ", exact " << want[r];
    share += bound[r] > 0 ? error / bound[r] : 0;
  }
  EXPECT_LE(share / static_cast<double>(want.size()), 0.25) << what;
}

/// Row r of y = m x summed in f32 in another order than the reference's: off by at most 1e-5 of
/// Σ_i |w_ri·x_i| (a float sum strays by a share of its terms' magnitudes, not of the sum, whose
/// terms can cancel: a one-row matrix's y can be a thousandth of them).
void expectWithinSumOrderBound(std::span<const float> got, std::span<const float> want, const CqMatrix &m,
                               std::span<const float> xRot, const std::string &what) {
  for (int64_t r = 0; r < m.rows; ++r) {
    double magnitude = 0;
    for (size_t i = 0; i < xRot.size(); ++i)
      magnitude += std::fabs(static_cast<double>(m.rotated[r * xRot.size() + i]) * xRot[i]);
    const double error = std::fabs(static_cast<double>(got[r]) - want[r]);
    if (std::getenv("NEEDLE_RUNTIME_TEST_VERBOSE") && r == 0)
      std::printf("  [measured] %-60s row 0: %.3g of Σ|w·x| (tolerance 1e-05)\n", what.c_str(),
                  magnitude > 0 ? error / magnitude : error);
    ASSERT_LE(error, 1e-5 * magnitude) << what << " row " << r << ": got " << got[r] << ", want " << want[r];
  }
}

// A batch of n tokens' inputs and outputs, each `stride` floats after the last, against the
// reference matvec of each token alone (the fast mode's kernels: within their bound of it); the
// floats between them must stay untouched. `kernel` reads `layout`.
void checkCqMatmul(int bits, int64_t rows, int64_t cols, int64_t n, CqMatmulKernel kernel = needle_rt::cq_matmul,
                   CqLayout layout = CqLayout::File, const std::string &name = "cq_matmul",
                   CqAccuracy accuracy = CqAccuracy::Float) {
  const std::string what = name + " bits=" + std::to_string(bits) + " rows=" + std::to_string(rows) +
                           " cols=" + std::to_string(cols) + " n=" + std::to_string(n);
  const CqMatrix m(what, rows, cols, bits);
  const auto [packed, norms] = relaid(m, layout);
  const int64_t padded = cq::paddedCols(cols), stride = padded + rows + 16;
  Vec arena(static_cast<size_t>(n * stride), 1e30f);
  for (int64_t j = 0; j < n; ++j) {
    const Vec x = normals(what + " x" + std::to_string(j), cols);
    float *xRot = arena.data() + j * stride;
    needle_rt::hadamard(x.data(), cols, 128, xRot);
    // Each group of each token at its own magnitude, token 0's second group zero: a kernel that
    // used another group's or token's scale (the fast mode's) would fail.
    for (int64_t i = 0; i < padded; ++i)
      xRot[i] = j == 0 && i / 128 == 1 ? 0.0f : std::ldexp(xRot[i], static_cast<int>((i / 128 + j) % 5) - 2);
  }
  const Vec before = arena;
  float *x = arena.data(), *y = arena.data() + padded;
  kernel(packed.data(), norms.data(), m.codebook.data(), bits, rows, cols, x, y, stride, n);
  for (int64_t j = 0; j < n; ++j) {
    const Vec xRot(x + j * stride, x + j * stride + padded);
    const std::string token = what + " token " + std::to_string(j);
    const Vec want = ref::matvec(m.rotated, rows, xRot);
    if (accuracy == CqAccuracy::Int8Tables)
      expectWithinLutBound(std::span(y + j * stride, rows), want, lutErrorBound(m, xRot), token);
    else
      expectWithinSumOrderBound(std::span(y + j * stride, rows), want, m, xRot, token);
    expectBitEqual(std::span(arena).subspan(j * stride, padded), std::span(before).subspan(j * stride, padded),
                   what + " leaves x");
    expectBitEqual(std::span(arena).subspan(j * stride + padded + rows, 16),
                   std::span(before).subspan(j * stride + padded + rows, 16), what + " writes only y");
  }
}

TEST(Runtime, CqMatmulMatchesEachTokensMatvec) {
  for (int bits : {2, 3, 4}) {
    checkCqMatmul(bits, 13, 200, 1); // one token: the matvec itself
    checkCqMatmul(bits, 13, 200, 5);
    checkCqMatmul(bits, 8, 384, 3);
  }
}

/// The shapes the CqX8, CqLut16 and CqLutDword kernels are checked on, at the widths `widths`: odd rows (a
/// partial tile of 16, rows past a multiple of 8), a partial group, one group, one row; blocks of
/// 4 groups whole and short (of 3, 2 and 1 groups); one token, and runs of 8, 4, 2 and 1.
void checkCq24Matmul(CqMatmulKernel kernel, CqLayout layout, const std::string &name, std::initializer_list<int> widths,
                     CqAccuracy accuracy = CqAccuracy::Float) {
  for (int bits : widths) {
    auto check = [&](int64_t rows, int64_t cols, int64_t n) {
      checkCqMatmul(bits, rows, cols, n, kernel, layout, name, accuracy);
    };
    for (int64_t n : {1, 2, 4, 5, 15})
      check(13, 200, n);
    check(16, 200, 1); // rows a multiple of 8 (and of 16), nothing left over
    for (int64_t n : {1, 8}) {
      check(64, 384, n); // one short block (3 groups)
      check(9, 1100, n); // two whole blocks and a short one (9 groups)
      check(37, 640, n); // two whole tiles of 16 and a partial one
    }
    check(5, 1024, 17); // two whole blocks; 8 + 8 + 1 tokens
    check(7, 128, 3);
    check(1, 40, 1);
  }
}

/// The fast mode's groups to check its tables on: random inputs, inputs of one sign, a group of
/// zeros but one, all zeros; with an asymmetric codebook (its extremes -1.7 and 1.1 differ in
/// magnitude), one of one sign (0.2 to 1.5: a unit's products can cancel) and Needle's.
std::vector<std::pair<std::vector<float>, Vec>> lutGroups(int bits) {
  std::vector<float> skewed(1u << bits), positive(1u << bits);
  for (size_t k = 0; k < skewed.size(); ++k) {
    skewed[k] = -1.7f + 2.8f * static_cast<float>(k) / static_cast<float>(skewed.size() - 1);
    positive[k] = 0.2f + 1.3f * static_cast<float>(k) / static_cast<float>(skewed.size() - 1);
  }
  const std::vector<float> needle = cq::codebook(cq::CodebookKind::Needle, bits);
  Vec mixed = normals("lut x", 128), oneSign = mixed, single(128, 0.0f), zeros(128, 0.0f);
  for (float &v : oneSign)
    v = std::fabs(v);
  single[77] = -3.0f;
  std::vector<std::pair<std::vector<float>, Vec>> groups;
  for (const auto &c : {skewed, positive, needle})
    for (const Vec &x : {mixed, oneSign, single, zeros})
      groups.emplace_back(c, x);
  return groups;
}

// cqlut_group_table's scale is its largest entry (as the entries are formed: c[a]·x0 + c[b]·x1,
// or c[k]·x) over 127, found without forming the entries: checked against every entry.
TEST(Runtime, CqLutGroupTableScaleIsItsLargestEntry) {
  for (int bits : {2, 4})
    for (const auto &[c, x] : lutGroups(bits)) {
      float largest = 0.0f;
      for (int u = 0; u < 32 * bits; ++u)
        for (unsigned k = 0; k < 16; ++k)
          largest =
              std::max(largest, std::fabs(bits == 2 ? c[k & 3u] * x[2 * u] + c[k >> 2] * x[2 * u + 1] : c[k] * x[u]));
      std::vector<int8_t> table(16 * 32 * bits);
      EXPECT_EQ(needle_rt::cqlut_group_table(c.data(), bits, x.data(), table.data()), largest / 127.0f)
          << "bits " << bits;
      const int8_t top =
          *std::max_element(table.begin(), table.end(), [](int8_t a, int8_t b) { return std::abs(a) < std::abs(b); });
      EXPECT_EQ(std::abs(top), largest > 0.0f ? 127 : 0) << "bits " << bits;
    }
}

// This file is built for the baseline x86-64 (or another CPU): cq_matmul_x8_exact, cq_matmul_lut16_exact
// and cq_matmul_lut16_fast are the portable ones.
TEST(Runtime, CqX8MatmulPortable) { checkCq24Matmul(needle_rt::cq_matmul_x8_exact, CqLayout::CqX8, "cq_matmul_x8_exact", {4}); }

TEST(Runtime, CqLut16ExactMatmulPortable) {
  checkCq24Matmul(needle_rt::cq_matmul_lut16_exact, CqLayout::CqLut16, "cq_matmul_lut16_exact", {2, 4});
}

TEST(Runtime, CqLut16MatmulPortable) {
  checkCq24Matmul(needle_rt::cq_matmul_lut16_fast, CqLayout::CqLut16, "cq_matmul_lut16_fast", {2, 4}, CqAccuracy::Int8Tables);
}

#if NEEDLE_RT_X86_KERNELS
TEST(Runtime, CqX8MatmulAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  checkCq24Matmul(needle_rt::cq_matmul_x8_exact_avx2, CqLayout::CqX8, "cq_matmul_x8_exact_avx2", {4});
}

TEST(Runtime, CqX8MatmulAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // One token on vpermps of the codebook; batches as cq_matmul_x8_exact_avx2.
  checkCq24Matmul(needle_rt::cq_matmul_x8_exact_avx512, CqLayout::CqX8, "cq_matmul_x8_exact_avx512", {4});
}

TEST(Runtime, CqLut16ExactMatmulAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  // CQ2 on the pair tables; CQ4 (which needlec lays as CqX8) falls back to plain C++.
  checkCq24Matmul(needle_rt::cq_matmul_lut16_exact_avx2, CqLayout::CqLut16, "cq_matmul_lut16_exact_avx2", {2, 4});
}

TEST(Runtime, CqLut16ExactMatmulAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // CQ2 one token on vpermps of the pair tables, batches as cq_matmul_lut16_exact_avx2; CQ4 on
  // vpermps of the codebook, runs of 4, 2 and 1 tokens.
  checkCq24Matmul(needle_rt::cq_matmul_lut16_exact_avx512, CqLayout::CqLut16, "cq_matmul_lut16_exact_avx512", {2, 4});
}

TEST(Runtime, CqLutDwordExactMatmulAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // CQ4 in runs of tokens on vpermps of the codebook, the codes a load a byte on; a matrix's last
  // group read without a byte past it (the ASan build checks that).
  checkCq24Matmul(needle_rt::cq_matmul_dword_exact_avx512, CqLayout::CqLutDword, "cq_matmul_dword_exact_avx512", {4});
}

TEST(Runtime, CqLutChunkMajorExactMatmulAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // CQ2 token by token on vpermd of fixed-point pair tables, a chunk's held in registers for every
  // tile; a matrix's last chunk read without a byte past it (the ASan build checks that). 1100 rows
  // are 69 tiles: a slab of 64 and one of 5, each building its own tables.
  const auto kernel = needle_rt::cq_matmul_chunkmajor_exact_avx512;
  checkCq24Matmul(kernel, CqLayout::CqLutChunkMajor, "cq_matmul_chunkmajor_exact_avx512", {2});
  checkCqMatmul(2, 1100, 300, 2, kernel, CqLayout::CqLutChunkMajor, "cq_matmul_chunkmajor_exact_avx512");
}

bool hasAvx512Vnni() {
  return hasAvx512() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi") &&
         __builtin_cpu_supports("avx512vnni");
}

TEST(Runtime, CqLutChunkMajorExactMatmulAvx512Vnni) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  // CQ2 token by token on vpermb of the fixed-point pair tables' byte planes, a chunk's held in
  // registers for every tile; 1100 rows: two slabs, as above.
  const auto kernel = needle_rt::cq_matmul_chunkmajor_exact_avx512vnni;
  checkCq24Matmul(kernel, CqLayout::CqLutChunkMajor, "cq_matmul_chunkmajor_exact_avx512vnni", {2});
  checkCqMatmul(2, 1100, 300, 2, kernel, CqLayout::CqLutChunkMajor, "cq_matmul_chunkmajor_exact_avx512vnni");
}

/// `kernel` on m laid out as `layout`, for n tokens of rotated random inputs (named after `what`):
/// the tokens one after another, each its x_rot (padded) then its y (rows), for comparing kernels
/// bit for bit.
Vec cqMatmulRun(const CqMatrix &m, CqLayout layout, CqMatmulKernel kernel, int64_t n, const std::string &what) {
  const auto [packed, norms] = relaid(m, layout);
  const int64_t padded = cq::paddedCols(m.cols), stride = padded + m.rows;
  Vec io(static_cast<size_t>(n * stride));
  for (int64_t j = 0; j < n; ++j)
    needle_rt::hadamard(normals(what + " x" + std::to_string(j), m.cols).data(), m.cols, 128, io.data() + j * stride);
  kernel(packed.data(), norms.data(), m.codebook.data(), m.bits, m.rows, m.cols, io.data(), io.data() + padded, stride,
         n);
  return io;
}

// The byte planes add the same int32 entries as the AVX-512F kernel's vpermd lookups (exact
// integer sums) and scale them by the same float operations: the same floats, bit for bit.
TEST(Runtime, CqLutChunkMajorVnniEqualsAvx512) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  for (const auto &[rows, cols, n] :
       {std::tuple<int64_t, int64_t, int64_t>{37, 1100, 1}, {64, 640, 3}, {1030, 256, 2}, {16, 128, 1}}) {
    const std::string what = "vnni vs avx512 rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
    const CqMatrix m(what, rows, cols, 2);
    expectBitEqual(cqMatmulRun(m, CqLayout::CqLutChunkMajor, needle_rt::cq_matmul_chunkmajor_exact_avx512vnni, n, what),
                   cqMatmulRun(m, CqLayout::CqLutChunkMajor, needle_rt::cq_matmul_chunkmajor_exact_avx512, n, what), what);
  }
}

TEST(Runtime, CqLutDwordExactMatmulAvx512Vnni) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  // CQ4 on vpermb of the codebook tables' byte planes, every token; and the object's kernel, which
  // takes them for a token alone on 64 tiles or more (its choice: the next test).
  checkCq24Matmul(needle_rt::cq4_plane_matmul_avx512vnni, CqLayout::CqLutDword, "cq4_plane_matmul_avx512vnni", {4});
  checkCq24Matmul(needle_rt::cq_matmul_dword_exact_avx512vnni, CqLayout::CqLutDword,
                  "cq_matmul_dword_exact_avx512vnni", {4});
  checkCqMatmul(4, 1030, 256, 1, needle_rt::cq_matmul_dword_exact_avx512vnni, CqLayout::CqLutDword,
                "cq_matmul_dword_exact_avx512vnni");
}

TEST(Runtime, CqLutDwordVnniTakesPlanesForLargeMatricesOnly) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  // A token alone on 64 tiles (1024 rows) or more gives the planes' floats, bit for bit; on fewer,
  // and for runs of tokens, the FMA kernel's. The two kernels' floats differ (fixed point against
  // float sums), so each comparison tells which ran.
  for (const auto &[rows, n, planes] : {std::tuple<int64_t, int64_t, bool>{1024, 1, true},
                                        {1040, 1, true},
                                        {1008, 1, false},
                                        {16, 1, false},
                                        {1040, 2, false}}) {
    const std::string what = "cq4 vnni choice rows=" + std::to_string(rows) + " n=" + std::to_string(n);
    const CqMatrix m(what, rows, 384, 4);
    const Vec chosen = cqMatmulRun(m, CqLayout::CqLutDword, needle_rt::cq_matmul_dword_exact_avx512vnni, n, what),
              plane = cqMatmulRun(m, CqLayout::CqLutDword, needle_rt::cq4_plane_matmul_avx512vnni, n, what),
              fma = cqMatmulRun(m, CqLayout::CqLutDword, needle_rt::cq_matmul_dword_exact_avx512, n, what);
    EXPECT_NE(plane, fma) << what << ": the planes' floats and the FMA kernel's must differ for this test to tell";
    expectBitEqual(chosen, planes ? plane : fma, what + (planes ? " takes the planes" : " takes the FMA kernel"));
  }
}

/// An exact kernel whose tables are fixed point (CqFixedPoint), on its layout, at its bits.
struct FixedPointKernel {
  std::string name;
  CqMatmulKernel kernel;
  CqLayout layout;
  int bits;
};

/// The fixed-point kernels this CPU can run: CQ2's with AVX-512F, and with VBMI and VNNI too CQ2's
/// and CQ4's on byte planes.
std::vector<FixedPointKernel> fixedPointKernels() {
  std::vector<FixedPointKernel> kernels;
  if (hasAvx512())
    kernels.push_back(
        {"cq_matmul_chunkmajor_exact_avx512", needle_rt::cq_matmul_chunkmajor_exact_avx512, CqLayout::CqLutChunkMajor, 2});
  if (hasAvx512Vnni()) {
    kernels.push_back({"cq_matmul_chunkmajor_exact_avx512vnni", needle_rt::cq_matmul_chunkmajor_exact_avx512vnni,
                       CqLayout::CqLutChunkMajor, 2});
    kernels.push_back({"cq4_plane_matmul_avx512vnni", needle_rt::cq4_plane_matmul_avx512vnni, CqLayout::CqLutDword, 4});
  }
  return kernels;
}

/// y = m x_rot by a fixed-point kernel for one token.
Vec fixedPointMatvec(const FixedPointKernel &k, const CqMatrix &m, std::span<const float> xRot) {
  const auto [packed, norms] = relaid(m, k.layout);
  Vec y(m.rows);
  k.kernel(packed.data(), norms.data(), m.codebook.data(), k.bits, m.rows, m.cols, xRot.data(), y.data(), 0, 1);
  return y;
}

TEST(Runtime, CqFixedPointFollowsEachGroupsMagnitude) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // Each group's tables take a scale of their own inputs: inputs near the float range's ends sum
  // as closely as ordinary ones (a scale off by a power of 2 would fail, or overflow the int32
  // sums), and a group of zeros is no trouble.
  for (const FixedPointKernel &k : fixedPointKernels()) {
    const CqMatrix m("fixed point", 37, 384, k.bits);
    for (const float magnitude : {1e-30f, 1e-3f, 1e30f}) {
      Vec xRot(384);
      needle_rt::hadamard(normals("fixed point x", 384).data(), 384, 128, xRot.data());
      for (int64_t i = 0; i < 384; ++i)
        xRot[i] = i / 128 == 1 ? 0.0f : xRot[i] * magnitude * (i < 128 ? 1.0f : 1e-3f);
      expectWithinSumOrderBound(fixedPointMatvec(k, m, xRot), ref::matvec(m.rotated, m.rows, xRot), m, xRot,
                                k.name + ", inputs of " + std::to_string(magnitude));
    }
  }
}

TEST(Runtime, CqFixedPointHoldsTheLargestEntry) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // The largest entry, max|c| times the widest unit (CQ2: a pair's |x0| + |x1|), equals the bound
  // the scale comes from; with the bound a hair under a power of 2, an entry scaled without the
  // margin rounds to 2^23, past the byte planes' three bytes (its top byte would wrap to -128, an
  // error of twice the bound; a negative one, -2^23, fits). The inputs: one unit's floats, of the
  // sign that makes max|c|'s entry positive, such that the bound is the float just under a power
  // of 2, the others small, the unit one where some rows' codes are the largest: those rows look
  // that entry up. (Other rows' sums can be far smaller than the bound, which sets the fixed point's
  // step: they are held to the magnitude tests above, whose inputs spread as rotated ones do.)
  for (const FixedPointKernel &k : fixedPointKernels()) {
    CqMatrix m("largest entry", 256, 128, k.bits);
    // max|c| raised to a power of 2 (the reference decodes with the same codebook): max|c| · v is
    // then exact, so v can put the bound on any float.
    const auto widest = std::max_element(m.codebook.begin(), m.codebook.end(),
                                         [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    *widest = std::copysign(std::exp2(std::ceil(std::log2(std::fabs(*widest)))), *widest);
    cq::decodeRotatedRows(m.packed.indices.data(), m.packed.norms.data(), 0, m.rows, m.cols, m.bits, m.codebook,
                          m.rotated.data());
    const int span = k.bits == 2 ? 2 : 1;                                          // a unit's columns
    const float largest = std::fabs(*widest), sign = std::copysign(1.0f, *widest); // sign: c·x > 0
    // Rows' columns whose weight is max|c| times the row's norm: their code is the largest.
    const auto largestAt = [&](int64_t r, int64_t i) {
      return std::fabs(m.rotated[r * 128 + i]) == largest * halfToFloat(m.packed.norms[r]);
    };
    const auto looksUp = [&](int64_t r, int64_t u) {
      return largestAt(r, span * u) && largestAt(r, span * u + span - 1);
    };
    const auto rowsAt = [&](int64_t u) { // the rows that look the largest entry up at unit u
      std::vector<int64_t> rows;
      for (int64_t r = 0; r < m.rows; ++r)
        if (looksUp(r, u))
          rows.push_back(r);
      return rows;
    };
    int64_t u = 0; // the first unit where some rows do
    std::vector<int64_t> rows;
    while (u < 128 / span && (rows = rowsAt(u)).empty())
      ++u;
    ASSERT_FALSE(rows.empty()) << k.name << ": no row's codes are the largest at any unit";
    // The unit's input v (each of CQ2's pair): the bound max|c| · (v + v) (CQ4: max|c| · v) is
    // 1 - 2^-24, the float just under 1.
    std::vector<float> units = {(1.0f - 0x1p-24f) / (span * largest)};
    // Below the normal range a product's rounding is a step of 2^-149, not a share of it: an entry
    // can outgrow the bound by more than 2^-20 of it (CQ2: 0.25 · 14 · 2^-149 rounds to 4 steps, so
    // an entry is 8 and the bound 7). Those inputs alone in their group, each rounding a sizeable share of
    // the sum, so the check is that no entry wraps (the opposite sign: an error of twice the sum),
    // give or take the output's own rounding, 2^-149.
    for (int n = 1; n <= 64; ++n)
      units.push_back(n * 0x1p-149f);
    for (const float v : units) {
      const bool subnormal = v < 0x1p-126f;
      Vec xRot = subnormal ? Vec(128, 0.0f) : normals("largest entry x", 128, 1e-3);
      for (int i = 0; i < span; ++i)
        xRot[span * u + i] = sign * v;
      const Vec got = fixedPointMatvec(k, m, xRot), want = ref::matvec(m.rotated, m.rows, xRot);
      for (const int64_t r : rows) {
        double magnitude = 0;
        for (int64_t i = 0; i < 128; ++i)
          magnitude += std::fabs(static_cast<double>(m.rotated[r * 128 + i]) * xRot[i]);
        EXPECT_LE(std::fabs(got[r] - want[r]), subnormal ? std::fabs(want[r]) + 0x1p-148 : 1e-5 * magnitude)
            << k.name << ", unit " << u << " at " << v << ", row " << r << ": got " << got[r] << ", want " << want[r];
      }
    }
  }
}

TEST(Runtime, CqFixedPointNonFiniteInputsComeOutNaN) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // An integer has no NaN or infinity: a group with one takes a NaN scale, so every row is NaN
  // (where float sums would give NaN or an infinity), never a finite wrong number.
  for (const FixedPointKernel &k : fixedPointKernels()) {
    const CqMatrix m("non-finite", 20, 256, k.bits);
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      Vec xRot = normals("non-finite x", 256);
      xRot[130] = bad;
      for (const float y : fixedPointMatvec(k, m, xRot))
        EXPECT_TRUE(std::isnan(y)) << k.name << ": input " << bad << " gave " << y;
    }
  }
}

TEST(Runtime, CqLut16MatmulAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  checkCq24Matmul(needle_rt::cq_matmul_lut16_fast_avx2, CqLayout::CqLut16, "cq_matmul_lut16_fast_avx2", {2, 4}, CqAccuracy::Int8Tables);
}

TEST(Runtime, CqLutDwordMatmulAvx512Vnni) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  checkCq24Matmul(needle_rt::cq_matmul_dword_fast_avx512vnni, CqLayout::CqLutDword, "cq_matmul_dword_fast_avx512vnni", {2, 4},
                  CqAccuracy::Int8Tables);
}

// The VNNI kernel on CqLutDword adds the same table entries as the AVX2 one on CqLut16 (exact
// integer sums) and scales them by the same float operations: the same floats, bit for bit.
TEST(Runtime, CqLutAvx512VnniEqualsAvx2) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  for (int bits : {2, 4})
    for (const auto &[rows, cols, n] :
         {std::tuple<int64_t, int64_t, int64_t>{37, 1100, 1}, {64, 640, 8}, {13, 200, 3}}) {
      const std::string what = "vnni vs avx2 bits=" + std::to_string(bits) + " rows=" + std::to_string(rows);
      const CqMatrix m(what, rows, cols, bits);
      const auto [lut16, norms] = relaid(m, CqLayout::CqLut16);
      const auto [dword, dwordNorms] = relaid(m, CqLayout::CqLutDword);
      const int64_t stride = cq::paddedCols(cols) + rows;
      Vec avx2(static_cast<size_t>(n * stride));
      for (int64_t j = 0; j < n; ++j) {
        const Vec x = normals(what + " x" + std::to_string(j), cols);
        needle_rt::hadamard(x.data(), cols, 128, avx2.data() + j * stride);
      }
      Vec vnni = avx2;
      const int64_t padded = cq::paddedCols(cols);
      needle_rt::cq_matmul_lut16_fast_avx2(lut16.data(), norms.data(), m.codebook.data(), bits, rows, cols, avx2.data(),
                                   avx2.data() + padded, stride, n);
      needle_rt::cq_matmul_dword_fast_avx512vnni(dword.data(), dwordNorms.data(), m.codebook.data(), bits, rows, cols,
                                         vnni.data(), vnni.data() + padded, stride, n);
      expectBitEqual(vnni, avx2, what);
    }
}

// The AVX2 tables equal the portable ones (to one step where the compiler fuses an entry's
// multiply and add), with the same scale: both take it from the products' extremes.
TEST(Runtime, CqLutGroupTableAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  for (int bits : {2, 4})
    for (const auto &[c, x] : lutGroups(bits)) {
      std::vector<int8_t> want(16 * 32 * bits), got(want.size());
      const float scale = needle_rt::cqlut_group_table(c.data(), bits, x.data(), want.data());
      const float avx2 = bits == 2 ? needle_rt::cqlut_group_table_avx2<2>(c.data(), x.data(), got.data())
                                   : needle_rt::cqlut_group_table_avx2<4>(c.data(), x.data(), got.data());
      EXPECT_EQ(avx2, scale) << "bits " << bits;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_LE(std::abs(got[i] - want[i]), 1) << "bits " << bits << " entry " << i;
    }
}
#endif

TEST(Runtime, FloatMatvec) {
  for (int64_t cols : {1, 3, 4, 17, 768}) {
    const int64_t rows = 11;
    const Vec w = normals("matvec w", rows * cols), x = normals("matvec x", cols);
    Vec got(rows);
    needle_rt::matvec(w.data(), rows, cols, x.data(), got.data());
    expectClose(got, ref::matvec(w, rows, x), 1e-5, "matvec cols=" + std::to_string(cols));
  }
}

TEST(Runtime, UnpadRowsAndScaleAndLanesInit) {
  const Vec in = normals("unpad", 3 * 128);
  Vec got(3 * 40);
  needle_rt::unpad_rows(in.data(), 3, 128, 40, got.data());
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < 40; ++i)
      ASSERT_EQ(got[r * 40 + i], in[r * 128 + i]);
  Vec inPlace = in;
  needle_rt::unpad_rows(inPlace.data(), 3, 128, 40, inPlace.data());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), inPlace.begin()));

  Vec scaled(in.size());
  needle_rt::scale(in.data(), static_cast<int64_t>(in.size()), std::sqrt(768.0f), scaled.data());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(scaled[i], in[i] * std::sqrt(768.0f));

  Vec lanes(4 * 40);
  needle_rt::lanes_init(got.data(), 40, lanes.data());
  for (int l = 0; l < 4; ++l)
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + 40, lanes.begin() + l * 40));
}

// ---- Norms and RoPE ----

TEST(Runtime, ZcNormWholeVectorAndPerHead) {
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

TEST(Runtime, RopeMatchesTheReferenceAtAnyPosition) {
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

// ---- Lanes ----

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

TEST(Runtime, LaneNorm) {
  const int64_t d = 96;
  const Vec lanes = normals("lane norm", 4 * d, 2.0);
  Vec got(4 * d);
  needle_rt::lane_norm(lanes.data(), d, 1e-6f, got.data());
  expectClose(got, ref::laneNorm(toLanes(lanes), 1e-6f), 1e-5, "lane_norm");
}

TEST(Runtime, MhcGatesIncludingSinkhorn) {
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

TEST(Runtime, SinkhornAlone) {
  for (double spread : {0.1, 1.0, 10.0}) {
    const Vec logits = normals("sinkhorn", 16, spread);
    std::array<float, 16> in;
    std::copy(logits.begin(), logits.end(), in.begin());
    const std::array<float, 16> want = ref::sinkhorn(in);
    needle_rt::sinkhorn4(in.data());
    expectClose(in, want, 1e-5, "sinkhorn spread " + std::to_string(spread));
  }
}

TEST(Runtime, LaneReadWriteMean) {
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

// ---- Engram ----

TEST(Runtime, EngramSlotFromTheTokenRing) {
  const std::vector<int64_t> orders = {2, 3};
  const int64_t heads = 3, slots = 18432, capacity = 3; // capacity = max(orders)
  std::vector<int32_t> tokens;
  std::vector<int32_t> ring(capacity, -12345); // stale contents must never be read
  for (int64_t t = 0; t < 24; ++t) {
    const int32_t token = static_cast<int32_t>((t * 2654435761u) % 8192);
    tokens.push_back(token);
    needle_rt::engram_remember(ring.data(), capacity, t, token);
    for (int64_t oi = 0; oi < 2; ++oi)
      for (int64_t h = 0; h < heads; ++h)
        ASSERT_EQ(needle_rt::engram_slot(ring.data(), capacity, t, oi, orders[oi], h, heads, slots),
                  ref::engramSlot(tokens, t, oi, orders[oi], h, heads, slots))
            << "t=" << t << " oi=" << oi << " h=" << h;
  }
}

/// The engram gather, for a tables tensor [tables, slots, sub_dim], exactly as
/// IrEvaluator::engramGather computes it from the reference's decode.
TEST(Runtime, EngramGatherIsBitIdenticalToTheEvaluator) {
  for (int64_t subDim : {40, 128, 200}) {
    const std::vector<int64_t> orders = {2, 3};
    const int64_t heads = 2, tables = 4, slots = 37, capacity = 3, padded = cq::paddedCols(subDim);
    const CqMatrix m("engram tables", tables * slots, subDim, 2);
    std::vector<int32_t> tokens, ring(capacity);
    for (int64_t t = 0; t < 10; ++t) {
      tokens.push_back(static_cast<int32_t>((t * 7919 + 3) % 1000));
      needle_rt::engram_remember(ring.data(), capacity, t, tokens.back());
      Vec want(tables * padded, 0.0f);
      for (int64_t oi = 0; oi < 2; ++oi) {
        if (t < orders[oi] - 1)
          continue;
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t table = oi * heads + h;
          const uint32_t slot = ref::engramSlot(tokens, t, oi, orders[oi], h, heads, slots);
          std::copy_n(m.rotated.begin() + (table * slots + slot) * padded, padded, want.begin() + table * padded);
        }
      }
      Vec got(tables * padded, 9.0f);
      needle_rt::engram_gather(ring.data(), capacity, t, orders.data(), 2, heads, m.packed.indices.data(),
                               m.packed.norms.data(), m.codebook.data(), 2, slots, subDim, got.data());
      expectBitEqual(got, want, "engram_gather sub_dim=" + std::to_string(subDim) + " t=" + std::to_string(t));
    }
  }
}

TEST(Runtime, EngramGate) {
  const int64_t D = 256;
  for (double keyScale : {1.0, 1e-4}) {
    const Vec u = normals("eg u", D, 2.0), k = normals("eg k", D, keyScale), v = normals("eg v", D);
    // A key correlated with u makes the gate leave 1/2.
    Vec key(D);
    for (int64_t i = 0; i < D; ++i)
      key[i] = k[i] + static_cast<float>(keyScale) * 0.5f * u[i];
    Vec got(D);
    needle_rt::engram_gate(u.data(), key.data(), v.data(), D, 1e-6f, got.data());
    const Vec want = ref::addEngram(u, key, v, 1e-6f);
    expectClose(got, want, 1e-5, "engram_gate key scale " + std::to_string(keyScale));
    Vec inPlace = u;
    needle_rt::engram_gate(inPlace.data(), key.data(), v.data(), D, 1e-6f, inPlace.data());
    expectClose(inPlace, want, 1e-5, "engram_gate in place");
  }
}

// ---- Causal taps ----

void checkTaps(int64_t count, int64_t stride, bool inPlace) {
  const int64_t n = 24, positions = 3 * stride * count + 5;
  const std::string tag =
      "taps count=" + std::to_string(count) + " stride=" + std::to_string(stride) + (inPlace ? " in place" : "");
  const Vec taps = normals(tag + " w", count * n);
  Vec ring(needle_rt::taps_state_floats(n, count, stride), 1e30f); // stale contents must never be read
  std::deque<Vec> history;
  for (int64_t t = 0; t < positions; ++t) {
    const Vec x = normals(tag + " x" + std::to_string(t), n);
    const Vec want = ref::applyTaps(x, history, taps, count, stride);
    ref::remember(history, x, static_cast<size_t>(stride * (count - 1)));
    Vec got(n);
    if (inPlace) {
      got = x;
      needle_rt::causal_taps(got.data(), n, taps.data(), count, stride, ring.data(), t, got.data());
    } else {
      needle_rt::causal_taps(x.data(), n, taps.data(), count, stride, ring.data(), t, got.data());
    }
    expectClose(got, want, 1e-5, tag + " t=" + std::to_string(t));
  }
}

TEST(Runtime, CausalTapsStride1Count3) { checkTaps(3, 1, false); }
TEST(Runtime, CausalTapsStride3Count4) { checkTaps(4, 3, false); } // engram value taps, δ = 3
TEST(Runtime, CausalTapsInPlace) {
  checkTaps(3, 1, true);
  checkTaps(4, 2, true);
}
TEST(Runtime, CausalTapsCount1And2) {
  checkTaps(1, 1, false);
  checkTaps(2, 1, false);
  checkTaps(2, 3, true);
}

// ---- Attention ----

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
}

TEST(Runtime, AttentionPortable) {
  checkAttentionCases(needle_rt::attention);
  checkAttentionVectorCases(needle_rt::attention);
}

#if NEEDLE_RT_X86_KERNELS
/// needle_rt::avx2_exp on 8 floats.
NEEDLE_RT_AVX2 void avx2Exp(const float *x, float *out) {
  _mm256_storeu_ps(out, needle_rt::avx2_exp(_mm256_loadu_ps(x)));
}

TEST(Runtime, Avx2ExpWithin2ToTheMinus22OfStdExp) {
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

TEST(Runtime, AttentionAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  checkAttentionCases(needle_rt::attention_avx2); // dv 6: attention_read
  checkAttentionVectorCases(needle_rt::attention_avx2);
}

/// needle_rt::avx512_exp on 16 floats.
NEEDLE_RT_AVX512 void avx512Exp(const float *x, float *out) {
  _mm512_storeu_ps(out, needle_rt::avx512_exp(_mm512_loadu_ps(x)));
}

/// avx512_exp does avx2_exp's operations 16 lanes at a time: the same floats, the edges too.
TEST(Runtime, Avx512ExpEqualsAvx2Exp) {
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

TEST(Runtime, AttentionAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  checkAttentionCases(needle_rt::attention_avx512); // dv 6: attention_read
  checkAttentionVectorCases(needle_rt::attention_avx512);
  checkAttention(needle_rt::attention_avx512, {4, 2, 8, 80}, 0, 150, 150); // dv 80: a 64-wide block, then 16
  // Scores of order ±1000 through the 16-lane softmax and avx512_exp (dv 16: not the AVX2 kernel).
  checkAttention(needle_rt::attention_avx512, {12, 2, 8, 16}, 0, 60, 60, 30.0, 1e-4);
}

/// attention_avx512 sums as attention_avx2 does, only 16 lanes at a time: the same floats.
TEST(Runtime, AttentionAvx512EqualsAvx2) {
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

// ---- After attention ----

TEST(Runtime, SigmoidResidualGateAndBlockUpdate) {
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

TEST(Runtime, KroneckerAlone) {
  const int64_t ba = 4, bb = 8;
  const Vec z = normals("kz", ba * bb), wa = normals("kwa", ba * ba), wb = normals("kwb", bb * bb);
  Vec tmp(ba * bb), got(ba * bb);
  needle_rt::kronecker(z.data(), wa.data(), wb.data(), ba, bb, tmp.data(), got.data());
  expectClose(got, ref::kronecker(z, wa, wb, ba, bb), 1e-5, "kronecker");
}

TEST(Runtime, KronMlpPadded) { checkKronMlp(24, 4, 8); } // n = 32 > D: padding and [:D]
TEST(Runtime, KronMlpSquare) { checkKronMlp(64, 8, 8); }
TEST(Runtime, KronMlpNeedleShape) { checkKronMlp(768, 32, 32); }

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

TEST(Runtime, KroneckerAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  checkKronecker(needle_rt::kronecker_avx2, "kronecker_avx2");
}

TEST(Runtime, KroneckerAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  checkKronecker(needle_rt::kronecker_avx512, "kronecker_avx512");
}

TEST(Runtime, SiluAvx2) {
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

TEST(Runtime, SigmoidGateAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  // σ's two branches and its saturation, a NaN gate, and a tail past a multiple of 8.
  Vec gate;
  for (double v = -120; v <= 120; v += 0.37)
    gate.push_back(static_cast<float>(v));
  gate.push_back(-1e30f), gate.push_back(1e30f), gate.push_back(-std::numeric_limits<float>::infinity());
  gate.push_back(std::numeric_limits<float>::quiet_NaN());
  const Vec x = normals("gated", static_cast<int64_t>(gate.size()));
  Vec got(x.size());
  needle_rt::sigmoid_gate_avx2(x.data(), gate.data(), static_cast<int64_t>(x.size()), got.data());
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    const double want = x[i] / (1 + std::exp(-static_cast<double>(gate[i])));
    EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "gate " << gate[i];
  }
  EXPECT_TRUE(std::isnan(got.back())) << "a NaN gate gives NaN (the scalar tail)";
  Vec nans(8, std::numeric_limits<float>::quiet_NaN()), out(8);
  needle_rt::sigmoid_gate_avx2(x.data(), nans.data(), 8, out.data());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[7])) << "NaN gates 8 at a time give NaN";
}

/// needle_rt::avx2_log of 8 floats (the intrinsics need the AVX2 target this function has).
NEEDLE_RT_AVX2 void logAvx2(const float *x, float *out) {
  _mm256_storeu_ps(out, needle_rt::avx2_log(_mm256_loadu_ps(x)));
}

TEST(Runtime, LogAvx2) {
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

// The mixing gates with sinkhorn4_avx2 against the portable ones, on logits of several spreads
// (a spread of 40 makes most of e^x vanish, the case the max shift is for).
TEST(Runtime, MhcGatesAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  for (float spread : {0.1f, 1.0f, 5.0f, 40.0f}) {
    const Vec pre = normals("pre", 4), post = normals("post", 4), res = normals("res", 16, spread),
              a = {0.7f, 1.3f, 1.0f}, bPre = normals("bpre", 4), bPost = normals("bpost", 4),
              bRes = normals("bres", 16);
    for (int64_t position : {0, 5}) {
      Vec hPre(4), hPost(4), mix(16), wantPre(4), wantPost(4), wantMix(16);
      needle_rt::mhc_gates_avx2(pre.data(), post.data(), res.data(), a.data(), bPre.data(), bPost.data(), bRes.data(),
                                position, hPre.data(), hPost.data(), mix.data());
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
    needle_rt::mhc_gates_avx2(gates.data(), gates.data(), res.data(), a.data(), gates.data(), gates.data(),
                              zeros.data(), 0, hPre.data(), hPost.data(), mix.data());
    needle_rt::mhc_gates_with(gates.data(), gates.data(), res.data(), a.data(), gates.data(), gates.data(),
                              zeros.data(), 0, hPre.data(), hPost.data(), want.data(), needle_rt::sinkhorn4);
    for (int i = 0; i < 16; ++i)
      EXPECT_TRUE(std::isnan(mix[i]) && std::isnan(want[i])) << "mix " << i << " with " << bad << ": " << mix[i];
  }
}

TEST(Runtime, KronMlpAvx2) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  checkKronMlp(768, 32, 32, needle_rt::kron_mlp_avx2);
  checkKronMlp(90, 3, 32, needle_rt::kron_mlp_avx2);  // n = 96 > D
  checkKronMlp(128, 8, 16, needle_rt::kron_mlp_avx2); // the tiny preset's shape
  checkKronMlp(24, 4, 8, needle_rt::kron_mlp_avx2);   // the portable Kronecker, silu 8 at a time
}

/// kron_mlp_avx512 sums as kron_mlp_avx2 does, only 16 lanes at a time: the same floats, on
/// needle3's shape (32-column runs), the tiny preset's (16) and one left to the portable kernel.
TEST(Runtime, KronMlpAvx512EqualsAvx2) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F";
  checkKronMlp(768, 32, 32, needle_rt::kron_mlp_avx512);
  for (const auto &[d, ba, bb] : {std::tuple<int64_t, int64_t, int64_t>{768, 32, 32}, {128, 8, 16}, {24, 4, 8}}) {
    const KronMlpCase c(d, ba, bb);
    expectBitEqual(c.run(needle_rt::kron_mlp_avx512), c.run(needle_rt::kron_mlp_avx2), c.tag);
  }
}
#endif

// ---- Heads ----

ref::HeadWeights headWeights(const std::string &tag, int64_t rows, int64_t probes, int64_t queries, int64_t D,
                             int64_t outDim, bool bias) {
  ref::HeadWeights h;
  h.rows = rows, h.probes = probes, h.queries = queries, h.outDim = outDim, h.dModel = D;
  h.eps = 1e-6f, h.pad = 0;
  h.probeVectors = normals(tag + " probes", rows * probes * D, 0.5);
  h.gain = normals(tag + " gain", rows * probes, 1.0);
  h.query = normals(tag + " query", queries * D, 1.0);
  h.rowBias = normals(tag + " row bias", queries * rows * probes, 1.0);
  h.proj = normals(tag + " proj", outDim * queries * D, 1.0 / std::sqrt(double(queries * D)));
  if (bias)
    h.bias = normals(tag + " bias", 1);
  return h;
}

/// The runtime's pooled vector for its state, as head_pool_finish gives it.
Vec finish(const ref::HeadWeights &h, const Vec &state) {
  Vec scratch(needle_rt::head_finish_scratch_floats(h.rows, h.probes), 1e30f), pooled(h.queries * h.dModel);
  needle_rt::head_pool_finish(state.data(), h.rows, h.probes, h.dModel, h.gain.data(), h.query.data(), h.rowBias.data(),
                              h.queries, h.eps, scratch.data(), pooled.data());
  return pooled;
}

TEST(Runtime, HeadPoolingConfidenceAndEmbedding) {
  const int64_t rows = 4, probes = 3, queries = 2, D = 32, outDim = 5;
  const ref::HeadWeights conf = headWeights("confidence", rows, probes, queries, D, 1, true);
  const ref::HeadWeights emb = headWeights("embedding", rows, probes, queries, D, outDim, false);
  ref::OnlinePool confPool(conf), embPool(emb);
  Vec confState(needle_rt::head_state_floats(rows, probes, D), 0.0f), embState(confState);

  auto check = [&](const std::string &at) {
    const Vec pooled = finish(conf, confState);
    const float confidence = needle_rt::head_confidence(pooled.data(), conf.proj.data(), conf.bias[0], queries * D);
    expectClose(confidence, ref::confidenceFrom(conf, confPool.pooled()), 1e-5, "confidence " + at);
    Vec embedding(outDim);
    needle_rt::head_embedding(finish(emb, embState).data(), emb.proj.data(), outDim, queries * D, embedding.data());
    expectClose(embedding, ref::embeddingFrom(emb, embPool.pooled()), 1e-5, "embedding " + at);
  };

  check("before any position"); // R = 0: σ(bias) and a zero embedding
  EXPECT_EQ(ref::embeddingFrom(emb, embPool.pooled()), Vec(outDim, 0.0f));

  for (int64_t t = 0; t < 12; ++t) {
    // Cells of growing size: later scores beat the running max and rescale the old sums.
    std::vector<Vec> cells;
    std::vector<const float *> pointers;
    for (int64_t r = 0; r < rows; ++r)
      cells.push_back(normals("cell " + std::to_string(t) + " " + std::to_string(r), D, 1.0 + 0.3 * t));
    for (const Vec &c : cells)
      pointers.push_back(c.data());
    const bool pad = t == 2 || t == 7; // the caller leaves pad positions out
    if (!pad) {
      confPool.add(cells);
      embPool.add(cells);
      needle_rt::head_pool_add(confState.data(), rows, probes, D, pointers.data(), conf.probeVectors.data());
      needle_rt::head_pool_add(embState.data(), rows, probes, D, pointers.data(), emb.probeVectors.data());
    }
    check("t=" + std::to_string(t));
  }
}

TEST(Runtime, HeadPoolingExtremeScores) {
  // Scores of order ±150: e^score under- or overflows f32 unless taken relative to the running max.
  const int64_t rows = 3, probes = 4, queries = 2, D = 32, outDim = 6;
  const ref::HeadWeights emb = headWeights("extreme", rows, probes, queries, D, outDim, false);
  ref::OnlinePool pool(emb);
  Vec state(needle_rt::head_state_floats(rows, probes, D), 0.0f);
  for (int64_t t = 0; t < 8; ++t) {
    std::vector<Vec> cells;
    for (int64_t r = 0; r < rows; ++r)
      cells.push_back(normals("extreme " + std::to_string(t) + " " + std::to_string(r), D, 300.0));
    const float *pointers[] = {cells[0].data(), cells[1].data(), cells[2].data()};
    pool.add(cells);
    needle_rt::head_pool_add(state.data(), rows, probes, D, pointers, emb.probeVectors.data());
    Vec embedding(outDim);
    needle_rt::head_embedding(finish(emb, state).data(), emb.proj.data(), outDim, queries * D, embedding.data());
    expectClose(embedding, ref::embeddingFrom(emb, pool.pooled()), 1e-5,
                "embedding, extreme scores t=" + std::to_string(t));
  }
}

TEST(Runtime, HeadPoolingOnePosition) {
  // The first kept position starts the state (its score becomes the max); it is not blended with zeros.
  const int64_t rows = 2, probes = 2, queries = 3, D = 16;
  const ref::HeadWeights conf = headWeights("one position", rows, probes, queries, D, 1, true);
  ref::OnlinePool pool(conf);
  Vec state(needle_rt::head_state_floats(rows, probes, D), 0.0f);
  std::vector<Vec> cells = {normals("pf0", D, 5.0), normals("pf1", D, 5.0)};
  const float *pointers[] = {cells[0].data(), cells[1].data()};
  pool.add(cells);
  needle_rt::head_pool_add(state.data(), rows, probes, D, pointers, conf.probeVectors.data());
  const Vec pooled = finish(conf, state);
  expectClose(needle_rt::head_confidence(pooled.data(), conf.proj.data(), conf.bias[0], queries * D),
              ref::confidenceFrom(conf, pool.pooled()), 1e-5, "confidence after one position");
}

} // namespace
