// The runtime's CQ matvec kernels on the target they are built for (natively, under qemu, under
// Node's WASI: test/lit/codegen/kernels-*.test), against a plain double-precision matvec written
// here from spec/cq.md: the file's layout (cq_matmul, 2, 3 and 4 bits), the exact mode's layouts
// as needlec re-lays them (codegen/Select/WeightLayouts.cpp; CqLut16 for CQ2, cq_matmul_lut16_exact,
// and CqX8 for CQ4, cq_matmul_x8_exact: their AVX2 or AVX-512 code when built for it, NEON on aarch64,
// plain C++ otherwise; built for AVX-512, the object's CqLutChunkMajor for CQ2 with cq_matmul_chunkmajor_exact_avx512
// and CqLutDword for CQ4 with cq_matmul_dword_exact_avx512 too), and the fast mode's CqLut16 layout
// (cq_matmul_lut16_fast, 2 and 4 bits, held to its error bound instead: docs/targets.md, "The fast mode"; built for
// AVX-512 VBMI and VNNI, its CqLutDword layout and cq_matmul_dword_fast_avx512vnni too, and the exact ones' VNNI
// kernels). Odd rows (partial tiles of 16), partial and single groups, whole and short blocks, one token and runs of
// tokens. Prints one line per failure and a summary; exits non-zero on any failure.
#include "codegen/Select/WeightLayouts.h"
#include "needle_runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

// Built for AVX-512 with VBMI and VNNI (besides AVX-512F, AVX2, FMA, F16C), it checks
// needle_rt::cq_matmul_dword_fast_avx512vnni on the CqLutDword layout, cq_matmul_chunkmajor_exact_avx512vnni on
// CqLutChunkMajor and cq_matmul_dword_exact_avx512vnni and cq4_plane_matmul_avx512vnni on
// CqLutDword too.
#if NEEDLE_RT_X86_KERNELS && defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__) &&            \
    defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define NEEDLE_CHECK_VNNI 1
#else
#define NEEDLE_CHECK_VNNI 0
#endif

namespace {

/// A small deterministic generator (xorshift), the same sequence on every target.
struct Random {
  uint64_t state;
  uint32_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<uint32_t>(state >> 16);
  }
  float uniform() { return static_cast<float>(next() % 2000001) / 1000000.0f - 1.0f; } // [-1, 1]
};

/// A CQ matrix in the file's layout (spec/cq.md): random indices and fp16 norms in [0.5, 2).
struct Matrix {
  int bits;
  int64_t rows, cols, groups;
  std::vector<uint8_t> packed;
  std::vector<uint16_t> norms;
  std::vector<float> codebook;

  Matrix(int bits_, int64_t rows_, int64_t cols_, Random &random)
      : bits(bits_), rows(rows_), cols(cols_), groups((cols_ + 127) / 128),
        packed(static_cast<size_t>(rows_ * groups * 16 * bits_)), norms(static_cast<size_t>(rows_ * groups)) {
    for (uint8_t &byte : packed)
      byte = static_cast<uint8_t>(random.next());
    for (uint16_t &norm : norms) // exponent 14 or 15 (0.5 or 1 times 1.mantissa)
      norm = static_cast<uint16_t>(((14 + random.next() % 2) << 10) | (random.next() & 0x3FF));
    for (int i = 0; i < (1 << bits); ++i) // sorted, as a codebook must be
      codebook.push_back(-0.25f + 0.5f * static_cast<float>(i) / static_cast<float>((1 << bits) - 1) +
                         0.01f * random.uniform());
  }

  /// Index k of row r, read from the spec's packing.
  unsigned index(int64_t r, int64_t k) const {
    const uint8_t *row = &packed[static_cast<size_t>(r * groups * 16 * bits)];
    if (bits == 3) {
      const uint8_t *run = row + (k / 8) * 3;
      const uint32_t word = run[0] | (run[1] << 8) | (static_cast<uint32_t>(run[2]) << 16);
      return (word >> (3 * (k % 8))) & 7u;
    }
    return (row[k / (8 / bits)] >> (bits * (k % (8 / bits)))) & ((1u << bits) - 1u);
  }

  /// The fast mode's bound on row r's error: per group, its table entries (sums over a unit of
  /// 4/bits columns of c[i] x[k]) are rounded to multiples of the group's largest |entry| / 127,
  /// so each of the group's 32·bits lookups is off by at most half of that, times the norm.
  double lut_bound(int64_t r, const float *x) const {
    const int64_t width = 4 / bits;
    double bound = 0.0;
    for (int64_t g = 0; g < groups; ++g) {
      double largest = 0.0;
      for (int64_t u = 0; u < 32 * bits; ++u)
        for (unsigned k = 0; k < 16; ++k) {
          double entry = 0.0;
          for (int64_t j = 0; j < width; ++j)
            entry +=
                static_cast<double>(codebook[(k >> (bits * j)) & ((1u << bits) - 1u)]) * x[g * 128 + u * width + j];
          largest = std::fmax(largest, std::fabs(entry));
        }
      bound += needle_rt::half_to_float(norms[static_cast<size_t>(r * groups + g)]) * largest / 127 * 0.5 * 32 * bits;
    }
    return bound * 1.001; // and the float sums' rounding
  }
  /// Row r's y = Σ_k c[index] · n16 · x[k] in double, and its terms' magnitude Σ_k |c[index] · n16 · x[k]|.
  struct Dot {
    double sum = 0.0, magnitude = 0.0;
  };
  Dot dot(int64_t r, const float *x) const {
    Dot d;
    for (int64_t k = 0; k < groups * 128; ++k) {
      const double term =
          static_cast<double>(codebook[index(r, k)]) *
          static_cast<double>(needle_rt::half_to_float(norms[static_cast<size_t>(r * groups + k / 128)])) *
          static_cast<double>(x[k]);
      d.sum += term;
      d.magnitude += std::fabs(term);
    }
    return d;
  }
};

using Kernel = void (*)(const uint8_t *, const uint16_t *, const float *, int, int64_t, int64_t, const float *, float *,
                        int64_t, int64_t);

int checks = 0, failures = 0;

/// Runs `kernel` on n tokens (x and y `stride` floats apart, y after x, canaries after y) and
/// holds each token's y to the double matvec: each row's error within 1e-5 of its terms'
/// magnitudes, Σ_k |c·n·x| (an f32 sum in another order strays by a share of them, not of the
/// sum, which can cancel) (`fast`:
/// each row within Matrix::lut_bound and the rows' mean error within a quarter of it, which a
/// wrong scale shows in), and the floats between the tokens' outputs untouched. Each group of
/// each token's inputs has its own magnitude (2^-2 to 2^2), so a kernel that used another
/// group's or token's scale fails, and token 0's second group is all zeros (a scale of 0).
void check(const char *name, Kernel kernel, const Matrix &m, const uint8_t *packed, const uint16_t *norms, int64_t n,
           Random &random, bool fast = false) {
  const int64_t padded = m.groups * 128, stride = padded + m.rows + 8;
  std::vector<float> io(static_cast<size_t>(n * stride), 1e30f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < m.cols; ++k) // the padding stays 0, as needle.hadamard leaves it
      io[static_cast<size_t>(j * stride + k)] =
          j == 0 && k / 128 == 1 ? 0.0f : std::ldexp(random.uniform(), static_cast<int>((k / 128 + j) % 5) - 2);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = m.cols; k < padded; ++k)
      io[static_cast<size_t>(j * stride + k)] = 0.0f;
  kernel(packed, norms, m.codebook.data(), m.bits, m.rows, m.cols, io.data(), io.data() + padded, stride, n);
  ++checks;
  bool failed = false;
  for (int64_t j = 0; j < n; ++j) {
    const float *x = &io[static_cast<size_t>(j * stride)], *y = x + padded;
    double worst = 0.0, largest = 0.0, share = 0.0;
    bool within = true;
    for (int64_t r = 0; r < m.rows; ++r) {
      const Matrix::Dot row = m.dot(r, x);
      const double want = row.sum, error = std::fabs(static_cast<double>(y[r]) - want);
      worst = std::fmax(worst, error);
      largest = std::fmax(largest, std::fabs(want));
      if (fast) {
        const double bound = m.lut_bound(r, x);
        within &= error <= bound;
        share += bound > 0.0 ? error / bound : 0.0;
      } else {
        within &= error <= 1e-5 * row.magnitude;
      }
    }
    within &= !fast || share <= 0.25 * static_cast<double>(m.rows);
    bool canaries = true;
    for (int64_t i = m.rows; i < m.rows + 8; ++i)
      canaries &= y[i] == 1e30f;
    if (!within || !canaries) {
      failed = true;
      std::printf("FAIL %s bits=%d rows=%lld cols=%lld n=%lld token %lld: error %.3g of %.3g%s\n", name, m.bits,
                  static_cast<long long>(m.rows), static_cast<long long>(m.cols), static_cast<long long>(n),
                  static_cast<long long>(j), worst, largest, canaries ? "" : ", wrote past y");
    }
  }
  failures += failed;
}

/// Little-endian byte pairs as fp16 values.
std::vector<uint16_t> halves(const std::vector<uint8_t> &bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  return out;
}

#if NEEDLE_RT_NEON_KERNELS
/// The fast mode's NEON tables against the portable ones (cqlut_group_table), group by group: the
/// same scale, and the same entries but for at most 1 in 256 one apart (the portable products may
/// be fused where the NEON ones are not, which moves an entry at a rounding tie). A lopsided
/// codebook (its most negative entry is not its largest), groups of inputs of magnitudes 2^-6 to
/// 2^6, one of zeros, and one with a NaN (the portable clamp makes it -127).
void check_neon_tables(Random &random) {
  for (int bits : {2, 4}) {
    std::vector<float> codebook;
    for (int i = 0; i < (1 << bits); ++i)
      codebook.push_back(-0.2f + 0.5f * static_cast<float>(i) / static_cast<float>((1 << bits) - 1));
    for (int group = 0; group < 14; ++group) {
      float x[128];
      for (float &v : x)
        v = group == 12 ? 0.0f : std::ldexp(random.uniform(), group - 6);
      if (group == 13)
        x[5] = std::nanf("");
      int8_t want[16 * 32 * 4], got[16 * 32 * 4];
      const float scale = needle_rt::cqlut_group_table(codebook.data(), bits, x, want);
      const float neon = bits == 2 ? needle_rt::cqlut_group_table_neon<2>(codebook.data(), x, got)
                                   : needle_rt::cqlut_group_table_neon<4>(codebook.data(), x, got);
      int apart = 0, next = 0;
      for (int i = 0; i < 16 * 32 * bits; ++i) {
        apart += got[i] - want[i] > 1 || want[i] - got[i] > 1;
        next += got[i] - want[i] == 1 || want[i] - got[i] == 1;
      }
      ++checks;
      if (apart || next > 2 * bits || neon != scale) {
        std::printf("FAIL cqlut_group_table_neon bits=%d group %d: scale %g against %g, %d entries apart, %d by one\n",
                    bits, group, static_cast<double>(neon), static_cast<double>(scale), apart, next);
        ++failures;
      }
    }
  }
}
#endif

} // namespace

int main() {
  Random random{0x9E3779B97F4A7C15ull};
  const int64_t shapes[][3] = {
      {13, 200, 1}, {13, 200, 2},  {13, 200, 5}, {7, 128, 3},  {1, 40, 1},
      {9, 1100, 3}, {5, 1024, 17}, {64, 384, 8}, {37, 640, 3}, // tiles of 16 rows: two whole and a partial one
  };
  for (int bits : {2, 3, 4})
    for (const auto &shape : shapes) {
      const Matrix m(bits, shape[0], shape[1], random);
      check("cq_matmul", needle_rt::cq_matmul, m, m.packed.data(), m.norms.data(), shape[2], random);
      if (bits == 3)
        continue;
      const auto *norms = reinterpret_cast<const uint8_t *>(m.norms.data());
      const std::vector<uint8_t> tiled = needle::tileCqLut16(m.packed.data(), m.rows, m.groups, bits);
      const std::vector<uint16_t> tiledNorms = halves(needle::blockCqLut16Norms(norms, m.rows, m.groups));
      if (bits == 4) {
        const std::vector<uint8_t> packed = needle::interleaveCqX8(m.packed.data(), m.rows, m.groups);
        check("cq_matmul_x8_exact", needle_rt::cq_matmul_x8_exact, m, packed.data(),
              halves(needle::blockCqX8Norms(norms, m.rows, m.groups)).data(), shape[2], random);
      }
      check("cq_matmul_lut16_exact", needle_rt::cq_matmul_lut16_exact, m, tiled.data(), tiledNorms.data(), shape[2],
            random);
      check("cq_matmul_lut16_fast", needle_rt::cq_matmul_lut16_fast, m, tiled.data(), tiledNorms.data(), shape[2],
            random, true);
#if NEEDLE_RT_X86_KERNELS && defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
      // The object's kernels (the C++ backend keeps CqLut16): the exact ones with AVX-512F (CQ2 on
      // CqLutChunkMajor, CQ4 on CqLutDword), and the fast one with VBMI and VNNI too (CqLutDword).
      const std::vector<uint8_t> dword = needle::tileCqLutDword(m.packed.data(), m.rows, m.groups, bits);
      if (bits == 2) {
        const std::vector<uint8_t> chunks = needle::tileCqLutChunkMajor(m.packed.data(), m.rows, m.groups, bits);
        const std::vector<uint16_t> chunkNorms = halves(needle::chunkMajorNorms(norms, m.rows, m.groups));
        check("cq_matmul_chunkmajor_exact_avx512", needle_rt::cq_matmul_chunkmajor_exact_avx512, m, chunks.data(),
              chunkNorms.data(), shape[2], random);
#if NEEDLE_CHECK_VNNI
        check("cq_matmul_chunkmajor_exact_avx512vnni", needle_rt::cq_matmul_chunkmajor_exact_avx512vnni, m,
              chunks.data(), chunkNorms.data(), shape[2], random);
#endif
      } else {
        check("cq_matmul_dword_exact_avx512", needle_rt::cq_matmul_dword_exact_avx512, m, dword.data(),
              tiledNorms.data(), shape[2], random);
#if NEEDLE_CHECK_VNNI
        check("cq_matmul_dword_exact_avx512vnni", needle_rt::cq_matmul_dword_exact_avx512vnni, m, dword.data(),
              tiledNorms.data(), shape[2], random);
        check("cq4_plane_matmul_avx512vnni", needle_rt::cq4_plane_matmul_avx512vnni, m, dword.data(), tiledNorms.data(),
              shape[2], random);
#endif
      }
#endif
#if NEEDLE_CHECK_VNNI
      check("cq_matmul_dword_fast_avx512vnni", needle_rt::cq_matmul_dword_fast_avx512vnni, m, dword.data(),
            tiledNorms.data(), shape[2], random, true);
#endif
    }
#if NEEDLE_RT_NEON_KERNELS
  check_neon_tables(random);
#endif
#if NEEDLE_CHECK_VNNI
  const char *path = "AVX-512 VNNI"; // and the exact matvecs' AVX-512, cq_matmul_lut16_fast's AVX2
#elif defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) // the runtime's #ifs
  const char *path = "AVX-512"; // the exact matvecs; the fast mode's AVX2
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  const char *path = "AVX2";
#elif NEEDLE_RT_NEON_KERNELS
  const char *path = "NEON"; // the exact modes' CqLut16 (CQ2) and CqX8 kernels and the fast mode's
#elif NEEDLE_RT_WASM_KERNELS && defined(__wasm_simd128__)
  const char *path = "simd128"; // the same
#else
  const char *path = "portable";
#endif
  std::printf("%s: %d checks, %d failed\n", path, checks, failures);
  return failures == 0 ? 0 : 1;
}
