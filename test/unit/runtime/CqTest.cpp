// The runtime's kernels of the Walsh-Hadamard rotation and CQ (runtime/kernels/cq.h, runtime/arch/*/cq_*.h,
// rotations_*.h): the rotations, the CQ matvecs on every layout and the fast mode's tables, against the reference
// (RuntimeTestSupport.h says how).
#include "CqMatrix.h"
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

TEST(RuntimeCq, FwhtIsBitIdenticalToCq) {
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

const bool kChecksEveryHadamard = checksEveryKernelOf("hadamard");

// Every registered rotation (the portable one, AVX2, AVX-512: groups of 4 and 16 hadamard_avx2's).
TEST(RuntimeCq, EveryRegisteredHadamardPadsThenRotatesEachGroup) {
  for (const auto &[info, kernel] : registeredKernels<decltype(&needle_rt::hadamard_portable)>("hadamard"))
    checkHadamard(kernel, std::string(info->name));
  checkHadamard(needle_rt::hadamard_portable, "hadamard_portable");
}

#if NEEDLE_RT_X86_KERNELS
TEST(RuntimeCq, FwhtAvx2IsBitIdenticalToCq) {
  if (!hasAvx2())
    GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  for (int64_t n : {8, 16, 32, 128, 1024}) {
    Vec x = normals("fwht avx2" + std::to_string(n), n), want = x;
    needle_rt::fwht_avx2(x.data(), n);
    cq::fwht(want.data(), n);
    expectBitEqual(x, want, "fwht_avx2 n=" + std::to_string(n));
  }
}
#endif

TEST(RuntimeCq, CqGroupDecodeFollowsThePackedLayout) {
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

TEST(RuntimeCq, CqRowIsBitIdenticalToDecodeRotatedRows) {
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

TEST(RuntimeCq, CqMatvecAtEveryWidth) {
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

TEST(RuntimeCq, CqMatmulMatchesEachTokensMatvec) {
  for (int bits : {2, 3, 4}) {
    checkCqMatmul(bits, 13, 200, 1); // one token: the matvec itself
    checkCqMatmul(bits, 13, 200, 5);
    checkCqMatmul(bits, 8, 384, 3);
  }
}

/// The shapes the CqX8, CqLut16 and CqLutDword kernels are checked on, at the widths `widths`: odd rows (a
/// partial tile of 16, rows past a multiple of 8), a partial group, one group, one row; blocks of
/// 4 groups whole and short (of 3, 2 and 1 groups); one token, and runs of 8, 4, 2 and 1.
void checkCq24Matmul(CqMatmulKernel kernel, CqLayout layout, const std::string &name, const std::vector<int> &widths,
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
TEST(RuntimeCq, CqLutGroupTableScaleIsItsLargestEntry) {
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

const bool kChecksEveryCqMatmul = checksEveryKernelOf("cq_matmul");

/// The test's name for a registered kernel's layout.
CqLayout layoutOf(KernelLayout layout) {
  constexpr CqLayout layouts[] = {CqLayout::File, CqLayout::CqLut16, CqLayout::CqLutDword, CqLayout::CqLutChunkMajor,
                                  CqLayout::CqX8};
  return layouts[static_cast<int>(layout)];
}

/// The widths needlec lays a layout's matrices at for a kernel (codegen/Select): CqX8 and the
/// exact CqLutDword kernels CQ4, CqLutChunkMajor CQ2, the others both.
std::vector<int> widthsOf(const KernelInfo &kernel) {
  if (kernel.layout == KernelLayout::CqX8 ||
      (kernel.layout == KernelLayout::CqLutDword && kernel.mode == KernelMode::Exact))
    return {4};
  if (kernel.layout == KernelLayout::CqLutChunkMajor)
    return {2};
  return {2, 4};
}

// Every registered CQ matmul this CPU runs, on its layout at its widths: the exact ones as float
// sums in another order, the fast ones within the int8 tables' bound. This file is built for the
// baseline x86-64 (or another CPU): the C++ backend's dispatchers (cq_matmul_x8_exact,
// cq_matmul_lut16_exact, cq_matmul_lut16_fast) take their portable code here.
TEST(RuntimeCq, EveryRegisteredCqMatmulOnItsLayout) {
  for (const auto &[info, kernel] : registeredKernels<CqMatmulKernel>("cq_matmul"))
    checkCq24Matmul(kernel, layoutOf(info->layout), std::string(info->name), widthsOf(*info),
                    info->mode == KernelMode::Fast ? CqAccuracy::Int8Tables : CqAccuracy::Float);
}

#if NEEDLE_RT_X86_KERNELS
TEST(RuntimeCq, CqLut16ExactMatmulAvx512) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // CQ2 one token on vpermps of the pair tables, batches as cq_matmul_lut16_exact_avx2; CQ4 on
  // vpermps of the codebook, runs of 4, 2 and 1 tokens.
  checkCq24Matmul(needle_rt::cq_matmul_lut16_exact_avx512, CqLayout::CqLut16, "cq_matmul_lut16_exact_avx512", {2, 4});
}

TEST(RuntimeCq, CqLutChunkMajorExactMatmulAvx512TwoSlabs) {
  if (!hasAvx512())
    GTEST_SKIP() << "this CPU lacks AVX-512F (or AVX2, FMA or F16C)";
  // 1100 rows are 69 tiles: a slab of 64 and one of 5, each building its own tables.
  const auto kernel = needle_rt::cq_matmul_chunkmajor_exact_avx512;
  checkCqMatmul(2, 1100, 300, 2, kernel, CqLayout::CqLutChunkMajor, "cq_matmul_chunkmajor_exact_avx512");
}

TEST(RuntimeCq, CqLutChunkMajorExactMatmulAvx512VnniTwoSlabs) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  // CQ2 token by token on vpermb of the fixed-point pair tables' byte planes, a chunk's held in
  // registers for every tile; 1100 rows: two slabs, as above.
  const auto kernel = needle_rt::cq_matmul_chunkmajor_exact_avx512vnni;
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
TEST(RuntimeCq, CqLutChunkMajorVnniEqualsAvx512) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  for (const auto &[rows, cols, n] :
       {std::tuple<int64_t, int64_t, int64_t>{37, 1100, 1}, {64, 640, 3}, {1030, 256, 2}, {16, 128, 1}}) {
    const std::string what = "vnni vs avx512 rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
    const CqMatrix m(what, rows, cols, 2);
    expectBitEqual(cqMatmulRun(m, CqLayout::CqLutChunkMajor, needle_rt::cq_matmul_chunkmajor_exact_avx512vnni, n, what),
                   cqMatmulRun(m, CqLayout::CqLutChunkMajor, needle_rt::cq_matmul_chunkmajor_exact_avx512, n, what),
                   what);
  }
}

TEST(RuntimeCq, CqLutDwordExactMatmulAvx512VnniPlanes) {
  if (!hasAvx512Vnni())
    GTEST_SKIP() << "this CPU lacks AVX-512 VBMI or VNNI (or AVX-512F, AVX2, FMA or F16C)";
  // CQ4 on vpermb of the codebook tables' byte planes, every token; and the registered kernel,
  // which takes them for a token alone on 64 tiles or more (its choice: the next test).
  checkCq24Matmul(needle_rt::cq4_plane_matmul_avx512vnni, CqLayout::CqLutDword, "cq4_plane_matmul_avx512vnni", {4});
  checkCqMatmul(4, 1030, 256, 1, needle_rt::cq_matmul_dword_exact_avx512vnni, CqLayout::CqLutDword,
                "cq_matmul_dword_exact_avx512vnni");
}

TEST(RuntimeCq, CqLutDwordVnniTakesPlanesForLargeMatricesOnly) {
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
    kernels.push_back({"cq_matmul_chunkmajor_exact_avx512", needle_rt::cq_matmul_chunkmajor_exact_avx512,
                       CqLayout::CqLutChunkMajor, 2});
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

TEST(RuntimeCq, CqFixedPointFollowsEachGroupsMagnitude) {
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

TEST(RuntimeCq, CqFixedPointHoldsTheLargestEntry) {
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

TEST(RuntimeCq, CqFixedPointNonFiniteInputsComeOutNaN) {
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

// The VNNI kernel on CqLutDword adds the same table entries as the AVX2 one on CqLut16 (exact
// integer sums) and scales them by the same float operations: the same floats, bit for bit.
TEST(RuntimeCq, CqLutAvx512VnniEqualsAvx2) {
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
TEST(RuntimeCq, CqLutGroupTableAvx2) {
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

TEST(RuntimeCq, FloatMatvec) {
  for (int64_t cols : {1, 3, 4, 17, 768}) {
    const int64_t rows = 11;
    const Vec w = normals("matvec w", rows * cols), x = normals("matvec x", cols);
    Vec got(rows);
    needle_rt::matvec(w.data(), rows, cols, x.data(), got.data());
    expectClose(got, ref::matvec(w, rows, x), 1e-5, "matvec cols=" + std::to_string(cols));
  }
}

TEST(RuntimeCq, UnpadRowsAndScaleAndLanesInit) {
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

} // namespace
