// needle_rt: the portable kernels a compiled Needle model calls, one per op of the needle
// dialect (docs/dialect.md), each computing what compiler/Reference computes for it
// (docs/model.md is the contract).
//
// This header, with the runtime headers it includes joined in (cmake/JoinHeader.cmake), is
// carried into the C++ that `needlec --emit cpp` writes, so together they are self-contained
// C++17: only <cstdint>, <cstddef>, <cmath>, <cstring> and <type_traits> (and, on x86-64 with
// GCC or Clang, <immintrin.h> for the AVX2 and AVX-512 kernels; on aarch64, <arm_neon.h>; on wasm
// with Clang, <wasm_simd128.h>: isa.h), which the C++ backend also includes ahead of the
// namespace it pastes the runtime into (codegen/Cpp); everything inline in namespace needle_rt;
// no allocation, exceptions, I/O, OS calls or mutable globals. Kernels read and write only the
// caller's memory. Sizes and positions are int64_t; "floats" below counts float elements. Where a kernel keeps state
// across tokens (rings, pooling), the comment above it gives the exact layout and size; the caller owns and places it
// (the arena planner).
//
// Arithmetic is f32 with f32 accumulators (the reference accumulates in double), except RoPE's
// angle, cos and sin, which model.md requires in double.
#ifndef NEEDLE_RUNTIME_H
#define NEEDLE_RUNTIME_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "isa.h"

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Scalars and small vector helpers
// ---------------------------------------------------------------------------------------------

/// IEEE binary16 -> f32, exact for every input (subnormals, infinities, NaN payloads).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  } else {
    // Rebias the exponent from 15 to 127.
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Asks for the cache lines holding bytes [p, p + bytes) ahead of their use, a 64-byte line at a
/// time from the one p lies in (GCC and Clang; a no-op elsewhere). A prefetch never faults.
inline void prefetch_bytes(const void *p, int64_t bytes) {
#if defined(__GNUC__)
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + static_cast<uintptr_t>(bytes);
  for (uintptr_t line = begin & ~uintptr_t{63}; line < end; line += 64)
    __builtin_prefetch(reinterpret_cast<const void *>(line));
#else
  (void)p, (void)bytes;
#endif
}

/// σ(x) = 1 / (1 + e^-x). e^-x overflowing to +inf gives exactly 0, as it should.
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

/// Σ a[i] b[i]. With GCC and Clang, 16 partial sums as four 4-float vectors: four independent
/// chains of vector FMAs (one chain waits out each FMA's latency), summed pairwise at the end.
/// Otherwise four f32 accumulators.
inline float dot(const float *a, const float *b, int64_t n) {
  int64_t i = 0;
  float tail = 0.0f;
#if defined(__GNUC__)
  typedef float f32x4 __attribute__((vector_size(16)));
  f32x4 s[4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  for (; i + 16 <= n; i += 16)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      f32x4 x, y;
      std::memcpy(&x, a + i + 4 * k, sizeof x);
      std::memcpy(&y, b + i + 4 * k, sizeof y);
      s[k] += x * y;
    }
  const f32x4 sum = (s[0] + s[1]) + (s[2] + s[3]);
  tail = (sum[0] + sum[1]) + (sum[2] + sum[3]);
#endif
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i)
    s0 += a[i] * b[i];
  return tail + ((s0 + s1) + (s2 + s3));
}

/// 1 / sqrt(mean(x²) + eps): the factor of unit(x) = x / sqrt(mean(x²) + eps).
inline float rms_inverse(const float *x, int64_t n, float eps) {
  return 1.0f / std::sqrt(dot(x, x, n) / static_cast<float>(n) + eps);
}

/// out = x * factor (needle.scale; the embedding's sqrt(D)). out may equal x.
inline void scale(const float *x, int64_t n, float factor, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * factor;
}

// ---------------------------------------------------------------------------------------------
// Walsh-Hadamard rotation and CQ (docs/cq-format.md)
// ---------------------------------------------------------------------------------------------

/// The CQ group size G.
constexpr int64_t cq_group = 128;

/// Cp: cols rounded up to whole groups.
inline int64_t cq_padded_cols(int64_t cols) { return (cols + cq_group - 1) / cq_group * cq_group; }
/// Bytes of one packed row: Cp indices of `bits` each (Cp is a multiple of 8).
inline int64_t cq_row_bytes(int64_t cols, int bits) { return cq_padded_cols(cols) * bits / 8; }
/// Groups (and fp16 norms) per row.
inline int64_t cq_groups(int64_t cols) { return cq_padded_cols(cols) / cq_group; }

/// x <- H x in place, H[a][b] = (-1)^popcount(a&b) / sqrt(n), n a power of two. Unnormalized
/// butterflies, then one scale by 1/sqrt(n): the same operation order as cq::fwht, so the result
/// is bit-identical to it.
inline void fwht(float *x, int64_t n) {
  for (int64_t half = 1; half < n; half *= 2)
    for (int64_t block = 0; block < n; block += 2 * half)
      for (int64_t i = block; i < block + half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a + b;
        x[i + half] = a - b;
      }
  const float s = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (int64_t i = 0; i < n; ++i)
    x[i] *= s;
}

/// hadamard's first half: out = `in` padded with zeros to whole groups; returns that length.
inline int64_t hadamard_pad(const float *in, int64_t n, int64_t group, float *out) {
  const int64_t padded = (n + group - 1) / group * group;
  if (out != in)
    std::memmove(out, in, static_cast<size_t>(n) * sizeof(float));
  for (int64_t i = n; i < padded; ++i)
    out[i] = 0.0f;
  return padded;
}

/// hadamard in plain C++.
inline void hadamard_portable(const float *in, int64_t n, int64_t group, float *out) {
  const int64_t padded = hadamard_pad(in, n, group, out);
  for (int64_t g = 0; g < padded; g += group)
    fwht(out + g, group);
}

/// Σ_i c[idx_i] x[i] over one group of 128 indices packed at `bits` = 2, 3 or 4 (16·bits bytes),
/// decoding a whole byte (2, 4 bits) or 3-byte run (3 bits) at a time, into four accumulators.
inline float cq_group_dot(const uint8_t *p, int bits, const float *c, const float *x) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  if (bits == 2) {
    for (int j = 0; j < 32; ++j, x += 4) {
      const unsigned b = p[j];
      s0 += c[b & 3u] * x[0];
      s1 += c[(b >> 2) & 3u] * x[1];
      s2 += c[(b >> 4) & 3u] * x[2];
      s3 += c[b >> 6] * x[3];
    }
  } else if (bits == 4) {
    for (int j = 0; j < 64; j += 2, x += 4) {
      const unsigned b0 = p[j], b1 = p[j + 1];
      s0 += c[b0 & 15u] * x[0];
      s1 += c[b0 >> 4] * x[1];
      s2 += c[b1 & 15u] * x[2];
      s3 += c[b1 >> 4] * x[3];
    }
  } else { // 3 bits: 16 runs of 8 indices in 3 bytes
    for (int j = 0; j < 48; j += 3, x += 8) {
      const uint32_t w = p[j] | (static_cast<uint32_t>(p[j + 1]) << 8) | (static_cast<uint32_t>(p[j + 2]) << 16);
      s0 += c[w & 7u] * x[0] + c[(w >> 12) & 7u] * x[4];
      s1 += c[(w >> 3) & 7u] * x[1] + c[(w >> 15) & 7u] * x[5];
      s2 += c[(w >> 6) & 7u] * x[2] + c[(w >> 18) & 7u] * x[6];
      s3 += c[(w >> 9) & 7u] * x[3] + c[(w >> 21) & 7u] * x[7];
    }
  }
  return (s0 + s1) + (s2 + s3);
}

/// Decodes one group of 128 indices packed at `bits` (as cq_group_dot reads them) into
/// out[i·stride] = c[idx_i].
inline void cq_group_decode(const uint8_t *p, int bits, const float *c, float *out, int64_t stride) {
  if (bits == 2) {
    for (int j = 0; j < 32; ++j, out += 4 * stride) {
      const unsigned b = p[j];
      out[0] = c[b & 3u], out[stride] = c[(b >> 2) & 3u], out[2 * stride] = c[(b >> 4) & 3u];
      out[3 * stride] = c[b >> 6];
    }
  } else if (bits == 4) {
    for (int j = 0; j < 64; ++j, out += 2 * stride)
      out[0] = c[p[j] & 15u], out[stride] = c[p[j] >> 4];
  } else {
    for (int j = 0; j < 48; j += 3) {
      const uint32_t w = p[j] | (static_cast<uint32_t>(p[j + 1]) << 8) | (static_cast<uint32_t>(p[j + 2]) << 16);
      for (int k = 0; k < 8; ++k, out += stride)
        out[0] = c[(w >> (3 * k)) & 7u];
    }
  }
}

/// How a CQ matrix's packed indices and norms are laid out (docs/targets.md, "Weight layouts"):
/// where row r's group g and its norm are, and how a group of 128 indices (16·bits bytes) is
/// read, as a dot product with x and as decoded values. The matvecs below are written once over
/// a layout.
///
/// CqRowMajor is the file's layout (spec/cq.md): packed [rows][cq_row_bytes], 2 and 4 bits
/// little-endian within a byte, 3 bits as runs of 8 indices in 3 bytes; norms [rows][groups].
struct CqRowMajor {
  int bits;
  const uint8_t *group(const uint8_t *packed, int64_t, int64_t groups, int64_t r, int64_t g) const {
    return packed + (r * groups + g) * 16 * bits;
  }
  int64_t norm(int64_t, int64_t groups, int64_t r, int64_t g) const { return r * groups + g; }
  float group_dot(const uint8_t *p, const float *c, const float *x) const { return cq_group_dot(p, bits, c, x); }
  void group_decode(const uint8_t *p, const float *c, float *out, int64_t stride) const {
    cq_group_decode(p, bits, c, out, stride);
  }
};

/// The number of groups in the block of `block` groups that starts at group `first` (the last
/// block may hold fewer).
inline int64_t cq_block_count(int64_t groups, int64_t first, int64_t block) {
  return groups - first < block ? groups - first : block;
}

/// Where item i's group g is, counted in groups, when the groups are cut into blocks of `block`
/// (the last may hold fewer) and a block holds every one of `items` items' groups in it, item
/// after item: the block order of CqX8 (items are rows) and CqLut16 (items are tiles of rows).
inline int64_t cq_block_offset(int64_t items, int64_t groups, int64_t i, int64_t g, int64_t block) {
  const int64_t first = g - g % block;
  return first * items + i * cq_block_count(groups, first, block) + g % block;
}

/// Deals tokens j.. of n into runs for a batched kernel: run(std::integral_constant<int, k>{}, j)
/// for runs of k = kLongest tokens while they last, then one run of each smaller power of two that
/// fits (kLongest a power of two): runs of 8 take 15 tokens as 8 + 4 + 2 + 1.
template <int kLongest, typename Run> inline void token_runs(int64_t n, Run run, int64_t j = 0) {
  for (; j + kLongest <= n; j += kLongest)
    run(std::integral_constant<int, kLongest>{}, j);
  if constexpr (kLongest > 1)
    token_runs<kLongest / 2>(n, run, j);
}

/// CqX8: CQ4 re-laid by needlec for 8 vector lanes (the exact mode's; its CQ2 takes CqLut16).
///   - A group is 2 vectors of 32 bytes; column 64v + 32h + 8k + l is nibble h (0 low, 1 high)
///     of byte cq4_byte(k, l) of vector v. That is the order in which a byte lookup per byte of
///     the float and two rounds of unpacking within 128-bit halves (cq4x8_decode) hand back 32
///     indices' entries as 4 vectors of 8 consecutive columns.
///   - The groups are cut into blocks of 4 (the last may hold fewer), and a block holds every
///     row's groups in it, row after row: a pass over a block streams its bytes while its 512
///     inputs (per token) stay in L1. The norms follow the same order.
struct CqX8 {
  static constexpr int64_t block = 4, group_bytes = 64;
  /// The byte of a CQ4 vector that holds column 8k + l of its 32 (per nibble).
  static constexpr int64_t cq4_byte(int64_t k, int64_t l) { return l < 4 ? 4 * k + l : 12 + 4 * k + l; }
  /// Where row r's group g is, counted in groups (and in norms).
  static int64_t offset(int64_t rows, int64_t groups, int64_t r, int64_t g) {
    return cq_block_offset(rows, groups, r, g, block);
  }
  const uint8_t *group(const uint8_t *packed, int64_t rows, int64_t groups, int64_t r, int64_t g) const {
    return packed + group_bytes * offset(rows, groups, r, g);
  }
  int64_t norm(int64_t rows, int64_t groups, int64_t r, int64_t g) const { return offset(rows, groups, r, g); }
  /// Calls visit(l, column, index) for the 128 columns of one group, column = 8m + l, 8
  /// consecutive columns at a time (one per vector lane, so sums kept per l are independent
  /// chains).
  template <typename Visit> void for_each_index(const uint8_t *group, Visit visit) const {
    for (int m = 0; m < 16; ++m) // m = 8v + 4h + k
#pragma GCC unroll 8
      for (int l = 0; l < 8; ++l)
        visit(l, 8 * m + l, (group[32 * (m / 8) + cq4_byte(m % 4, l)] >> (4 * (m / 4 % 2))) & 15u);
  }
  float group_dot(const uint8_t *p, const float *c, const float *x) const {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for_each_index(p, [&](int l, int column, uint32_t index) { lane[l] += c[index] * x[column]; });
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  void group_decode(const uint8_t *p, const float *c, float *out, int64_t stride) const {
    for_each_index(p, [&](int, int column, uint32_t index) { out[column * stride] = c[index]; });
  }
};

/// needle.cq_matmul for one token on any layout: y[r] = Σ_g n16[r,g] Σ_i c[idx[r,g,i]]
/// x_rot[g·128 + i], i.e. W x with W = C·H per group and x_rot = H x (padded). packed and norms
/// (fp16) as the layout has them, codebook [2^bits], x_rot [cq_padded_cols(cols)], y [rows]. y must
/// not overlap x_rot.
template <typename Layout>
inline void cq_matvec_in(const Layout &layout, const uint8_t *packed, const uint16_t *norms, const float *codebook,
                         int64_t rows, int64_t cols, const float *x_rot, float *y) {
  const int64_t groups = cq_groups(cols);
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (int64_t g = 0; g < groups; ++g)
      sum += half_to_float(norms[layout.norm(rows, groups, r, g)]) *
             layout.group_dot(layout.group(packed, rows, groups, r, g), codebook, x_rot + g * cq_group);
    y[r] = sum;
  }
}

/// acc[r] = Σ_i w[i][r] x[i] over i < count for 8 rows at once, in kChains (1 or 4) partial sums
/// (i % kChains over whole runs of kChains, the rest into the first) added pairwise at the end, so
/// kChains chains of FMAs wait out each other's latency: with GCC and Clang each as two 4-float
/// vectors (the compilers' own vectorizers shuffle this loop nest badly, and GCC lowers one 8-float
/// vector through memory where vectors are 128 bits wide: SSE2, NEON, simd128; 5x slower there),
/// else plainly.
template <int kChains> inline void rows8_dots(const float (*w)[8], const float *x, int64_t count, float *acc) {
  static_assert(kChains == 1 || kChains == 4, "partial sums added pairwise");
#if defined(__GNUC__)
  typedef float f32x4 __attribute__((vector_size(16)));
  f32x4 lo[kChains] = {}, hi[kChains] = {};
  const auto add_row = [&](int k, int64_t i) {
    f32x4 a, b;
    std::memcpy(&a, w[i], sizeof a);
    std::memcpy(&b, w[i] + 4, sizeof b);
    lo[k] += a * x[i];
    hi[k] += b * x[i];
  };
#else
  float part[kChains][8] = {};
  const auto add_row = [&](int k, int64_t i) {
    for (int r = 0; r < 8; ++r)
      part[k][r] += w[i][r] * x[i];
  };
#endif
  int64_t i = 0;
  for (; i + kChains <= count; i += kChains)
    for (int k = 0; k < kChains; ++k)
      add_row(k, i + k);
  for (; i < count; ++i)
    add_row(0, i);
#if defined(__GNUC__)
  if constexpr (kChains == 4) {
    lo[0] = (lo[0] + lo[1]) + (lo[2] + lo[3]);
    hi[0] = (hi[0] + hi[1]) + (hi[2] + hi[3]);
  }
  std::memcpy(acc, &lo[0], sizeof lo[0]);
  std::memcpy(acc + 4, &hi[0], sizeof hi[0]);
#else
  for (int r = 0; r < 8; ++r)
    acc[r] = kChains == 4 ? (part[0][r] + part[1][r]) + (part[2][r] + part[3][r]) : part[0][r];
#endif
}

/// cq_matvec_in for n tokens at once (a batched step, docs/codegen.md): token j's x_rot and y are
/// j·stride floats after token 0's. A group of 8 rows is decoded once for all n tokens, and each
/// token's sums over it run across the 8 rows (a loop without a reduction, so it vectorizes).
template <typename Layout>
inline void cq_matmul_in(const Layout &layout, const uint8_t *packed, const uint16_t *norms, const float *codebook,
                         int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
  if (n == 1)
    return cq_matvec_in(layout, packed, norms, codebook, rows, cols, x_rot, y);
  constexpr int64_t tile = 8;
  const int64_t groups = cq_groups(cols);
  float w[cq_group][tile], scale[tile], acc[tile];
  for (int64_t r0 = 0; r0 < rows; r0 += tile) {
    const int64_t count = rows - r0 < tile ? rows - r0 : tile;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t r = 0; r < count; ++r)
        y[j * stride + r0 + r] = 0.0f;
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t r = 0; r < tile; ++r) {
        scale[r] = r < count ? half_to_float(norms[layout.norm(rows, groups, r0 + r, g)]) : 0.0f;
        if (r < count)
          layout.group_decode(layout.group(packed, rows, groups, r0 + r, g), codebook, &w[0][r], tile);
        else
          for (int64_t i = 0; i < cq_group; ++i)
            w[i][r] = 0.0f;
      }
      for (int64_t j = 0; j < n; ++j) {
        rows8_dots<1>(w, x_rot + j * stride + g * cq_group, cq_group, acc);
        for (int64_t r = 0; r < count; ++r)
          y[j * stride + r0 + r] += scale[r] * acc[r];
      }
    }
  }
}

/// needle.cq_matmul for one token on the file's layout (cq_matvec_in).
inline void cq_matvec(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits, int64_t rows,
                      int64_t cols, const float *x_rot, float *y) {
  cq_matvec_in(CqRowMajor{bits}, packed, norms, codebook, rows, cols, x_rot, y);
}

/// needle.cq_matmul for n tokens on the file's layout (cq_matmul_in).
inline void cq_matmul(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits, int64_t rows,
                      int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
  cq_matmul_in(CqRowMajor{bits}, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
}

/// CqLut16: CQ2 and CQ4 re-laid by needlec for the fast mode's table lookups (needlec
/// --activations int8, docs/targets.md "Weight layouts").
///   - A unit is 4/bits consecutive columns (a pair at 2 bits, one column at 4), and its code is
///     their indices, the first in the low bits: 4 bits, so a group has 32·bits units.
///   - Rows go in tiles of 16 (the last tile padded with zero codes and norms). A tile's group is
///     8·bits chunks of 32 bytes; byte 16·h + r of chunk q holds row r's codes of units 4q + h
///     (low nibble) and 4q + 2 + h (high nibble): one 16-entry byte shuffle per 128-bit half looks
///     up 16 rows' units at once (cqlut_matmul_avx2).
///   - The groups are cut into blocks of 4 as in CqX8, a block holding every tile's groups in it,
///     tile after tile; a tile's 16 fp16 norms per group follow the same order.
struct CqLut16 {
  static constexpr int64_t tile = 16, block = 4;
  static int64_t tiles(int64_t rows) { return (rows + tile - 1) / tile; }
  /// Bytes of one tile's group: 16 rows of 128 indices at `bits`.
  static int64_t tile_group_bytes(int bits) { return tile * 16 * bits; }
  /// Where tile t's group g is, counted in tile groups (and in runs of 16 norms).
  static int64_t offset(int64_t tiles, int64_t groups, int64_t t, int64_t g) {
    return cq_block_offset(tiles, groups, t, g, block);
  }
  /// Where row r's code of unit u is in a tile's group: the byte, and the nibble (4: the high).
  static int64_t byte(int64_t r, int64_t u) { return 32 * (u / 4) + 16 * (u % 2) + r; }
  static int shift(int64_t u) { return u % 4 < 2 ? 0 : 4; }
};

/// CqLutDword: the fast mode's layout for AVX-512 with VBMI and VNNI (cqlut_matmul_avx512vnni), and
/// the object's exact CQ4 layout for AVX-512F (cq4_exact_dword_matmul_avx512, and
/// cq4_exact_dword_matmul_avx512vnni with VBMI and VNNI).
/// CqLut16's units, codes, tiles, blocks and norms; only a tile's group is cut otherwise, into
/// 4·bits chunks of 64 bytes, bytes 4r..4r+3 of chunk m holding row r's codes of units 8m + b
/// (the low nibble of byte 4r + b) and 8m + 4 + b (its high nibble). A row's 8 units share one
/// 32-bit lane: a byte permute of 4 units' tables looks up each byte's own unit, and one vpdpbusd
/// adds a row's 4 entries into its lane.
struct CqLutDword {
  static int64_t byte(int64_t r, int64_t u) { return 64 * (u / 8) + 4 * r + u % 4; }
  static int shift(int64_t u) { return u % 8 < 4 ? 0 : 4; }
};

/// CqLutChunkMajor: the object's exact CQ2 layout for AVX-512F (cq2_exact_chunk_matmul_avx512, and
/// cq2_exact_chunk_matmul_avx512vnni with VBMI and VNNI).
/// CqLutDword's tiles, units, codes and 64-byte chunks, in slabs of up to 64 tiles (1024 rows),
/// slab after slab; within a slab chunk-major: group by group, chunk by chunk, tile after tile,
/// so chunk m of tile t's group g starts chunk(...) bytes in. A tile's norms of a group, 16 fp16,
/// the same way: slab by slab, group by group, tile after tile. A kernel that holds one chunk's
/// tables in registers then reads a slab's tiles' codes for them as one stream, and the whole
/// matrix as one stream, slab after slab.
struct CqLutChunkMajor {
  static constexpr int64_t slab_tiles = 64;
  /// The first tile of t's slab, and the slab's tiles.
  static int64_t slab_start(int64_t t) { return t / slab_tiles * slab_tiles; }
  static int64_t slab_size(int64_t tiles, int64_t t) {
    return tiles - slab_start(t) < slab_tiles ? tiles - slab_start(t) : slab_tiles;
  }
  static int64_t chunk(int64_t tiles, int64_t groups, int64_t t, int64_t g, int64_t m, int bits) {
    const int64_t start = slab_start(t), chunks = 4 * bits;
    return (start * groups * chunks + (g * chunks + m) * slab_size(tiles, t) + (t - start)) * 64;
  }
  static int64_t norms(int64_t tiles, int64_t groups, int64_t t, int64_t g) {
    const int64_t start = slab_start(t);
    return CqLut16::tile * (start * groups + g * slab_size(tiles, t) + (t - start));
  }
};

/// Row r's code of unit u in a tile's group of a CqLut16 or CqLutDword matrix.
template <typename Layout> inline unsigned cqlut_code(const uint8_t *tile_group, int64_t r, int64_t u) {
  return (tile_group[Layout::byte(r, u)] >> Layout::shift(u)) & 15u;
}

/// A CqLut16 matrix read row by row, as cq_matvec_in and cq_matmul_in read a layout (the exact
/// mode's CQ2 in plain C++, cqlut_exact_matmul_portable). Row r's bytes are r % 16 bytes into
/// each half of each chunk of its tile's group, so a row's group is that group seen from there.
struct CqLut16Rows {
  int bits; // 2 or 4
  const uint8_t *group(const uint8_t *packed, int64_t rows, int64_t groups, int64_t r, int64_t g) const {
    const int64_t at = CqLut16::offset(CqLut16::tiles(rows), groups, r / CqLut16::tile, g);
    return packed + CqLut16::tile_group_bytes(bits) * at + r % CqLut16::tile;
  }
  int64_t norm(int64_t rows, int64_t groups, int64_t r, int64_t g) const {
    return CqLut16::tile * CqLut16::offset(CqLut16::tiles(rows), groups, r / CqLut16::tile, g) + r % CqLut16::tile;
  }
  /// Σ_i c[idx_i] x[i] over the group, a unit's columns added first (CQ2: c[a]·x0 + c[b]·x1, the
  /// AVX2 kernel's table entry), in 8 chains (as CqX8's lanes: shorter chains, smaller rounding).
  float group_dot(const uint8_t *p, const float *c, const float *x) const {
    const int per_unit = 4 / bits, mask = (1 << bits) - 1;
    float chain[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int u = 0; u < 32 * bits; ++u) {
      const unsigned code = cqlut_code<CqLut16>(p, 0, u);
      float entry = 0.0f;
      for (int j = 0; j < per_unit; ++j)
        entry += c[(code >> (bits * j)) & mask] * x[per_unit * u + j];
      chain[u % 8] += entry;
    }
    return ((chain[0] + chain[1]) + (chain[2] + chain[3])) + ((chain[4] + chain[5]) + (chain[6] + chain[7]));
  }
  void group_decode(const uint8_t *p, const float *c, float *out, int64_t stride) const {
    const int per_unit = 4 / bits, mask = (1 << bits) - 1;
    for (int u = 0; u < 32 * bits; ++u)
      for (int j = 0; j < per_unit; ++j)
        out[(per_unit * u + j) * stride] = c[(cqlut_code<CqLut16>(p, 0, u) >> (bits * j)) & mask];
  }
};

/// The largest |entry| of a group's fast-mode table (cqlut_group_table) without forming the
/// entries: a unit's entries are sums of one product c[k]·x per input, and rounding is monotone,
/// so the largest is the sum of each input's largest product, or minus the sum of its smallest
/// (c's extremes times the input), whichever is larger: the same float as the largest entry,
/// unless the compiler fuses an entry's multiply and add (then within its rounding).
inline float cqlut_group_largest(const float *c, int bits, const float *x) {
  float low = c[0], high = c[0];
  for (int k = 1; k < (1 << bits); ++k) {
    low = std::fmin(low, c[k]);
    high = std::fmax(high, c[k]);
  }
  const int per_unit = 4 / bits;
  float largest = 0.0f;
  for (int u = 0; u < 32 * bits; ++u) {
    float top = 0.0f, bottom = 0.0f;
    for (int j = 0; j < per_unit; ++j) {
      const float a = low * x[per_unit * u + j], b = high * x[per_unit * u + j];
      top += std::fmax(a, b);
      bottom += std::fmin(a, b);
    }
    largest = std::fmax(largest, std::fmax(top, -bottom));
  }
  return largest;
}

/// The fast mode's lookup table of one group of x_rot (128 floats) for a CQ2 or CQ4 codebook:
/// entry k of unit u is Σ_j c[(k >> bits·j) & mask] x[u·(4/bits) + j] (for CQ2,
/// c[k & 3] x0 + c[k >> 2] x1), quantized to int8 with one scale for the whole group (the
/// largest |entry| maps to 127, ties to even). table gets 16 entries per unit, 16·32·bits bytes;
/// returns the scale. Every CQ weight's product with x is then looked up, not multiplied, and a
/// row's sum over a group is an exact integer sum times scale.
inline float cqlut_group_table(const float *c, int bits, const float *x, int8_t *table) {
  const int units = 32 * bits;
  auto entry = [&](int u, unsigned k) {
    return bits == 2 ? c[k & 3u] * x[2 * u] + c[k >> 2] * x[2 * u + 1] : c[k] * x[u];
  };
  const float largest = cqlut_group_largest(c, bits, x);
  const float inverse = largest > 0.0f ? 127.0f / largest : 0.0f;
  for (int u = 0; u < units; ++u) // clamped, so a NaN or infinite input cannot overflow the cast
    for (unsigned k = 0; k < 16; ++k)
      table[16 * u + k] =
          static_cast<int8_t>(std::nearbyint(std::fmin(std::fmax(entry(u, k) * inverse, -127.0f), 127.0f)));
  return largest / 127.0f;
}

/// One token's tables of a block of groups (a group's: 16 entries per unit, 1 KB for CQ2, 2 KB
/// for CQ4) and their scales, as a CqLut16 (or CqLutDword) kernel's tile function reads them for kTokens tokens:
/// tables[j] and scale[j] token j's.
template <int kBits> using CqLutBlockTables = int8_t[CqLut16::block][16 * 32 * kBits];
using CqLutBlockScales = float[CqLut16::block];

/// Stores (in a matrix's first block) or adds tile t's sums out[j][0..16) into y's rows 16t..
/// for kTokens tokens (token j's j·stride floats after token 0's), leaving out rows past `rows`.
template <int kTokens>
inline void cqlut_tile_to_y(const float (*out)[CqLut16::tile], int64_t t, int64_t rows, bool first_block, float *y,
                            int64_t stride) {
  const int64_t first = CqLut16::tile * t, live = rows - first < CqLut16::tile ? rows - first : CqLut16::tile;
  for (int j = 0; j < kTokens; ++j) {
    float *yt = y + j * stride + first;
    for (int64_t r = 0; r < live; ++r)
      yt[r] = first_block ? out[j][r] : yt[r] + out[j][r];
  }
}

/// The pass every CqLut16 (and CqLutDword) kernel makes over a matrix, block by block: prepare(g0, count) for the
/// block of `count` groups at g0 (building its tables), then tile(at, g0, count, out) for each tile
/// (its groups `at` tile groups into the matrix), whose sums out[j][0..16) are stored or added
/// into kTokens tokens' y (cqlut_tile_to_y).
template <int kTokens, typename Prepare, typename Tile>
inline void cqlut_each_tile(int64_t rows, int64_t groups, float *y, int64_t stride, Prepare prepare, Tile tile) {
  float out[kTokens][CqLut16::tile];
  const int64_t tiles = CqLut16::tiles(rows);
  for (int64_t g0 = 0; g0 < groups; g0 += CqLut16::block) {
    const int64_t count = cq_block_count(groups, g0, CqLut16::block);
    prepare(g0, count);
    for (int64_t t = 0; t < tiles; ++t) {
      tile(CqLut16::offset(tiles, groups, t, g0), g0, count, out);
      cqlut_tile_to_y<kTokens>(out, t, rows, g0 == 0, y, stride);
    }
  }
}

/// kTokens tokens' y (token j's j·stride floats after token 0's) on the fast mode's kernels
/// `Lut` (Lut::table builds a group's table, Lut::tile sums one tile over a block for 1 or 2
/// tokens): block by block, the tokens' tables of the block's groups, then every tile's sums
/// over them, 2 tokens at a time, added into y. A tile's weights of a block (2 KB for CQ2, 4 KB
/// for CQ4) stay in L1 while every pair of the tokens passes over them, so the weights stream
/// once per kTokens tokens; the tables (4 KB for CQ2, 8 KB for CQ4, per token, on the stack) stay
/// in L1 or L2.
template <typename Lut, int kBits, int kTokens>
inline void cqlut_tokens(const uint8_t *packed, const uint16_t *norms, const float *codebook, int64_t rows,
                         int64_t groups, const float *x_rot, float *y, int64_t stride) {
  alignas(64) CqLutBlockTables<kBits> tables[kTokens]; // whole cache lines for a 64-byte table load
  CqLutBlockScales scale[kTokens];
  cqlut_each_tile<kTokens>(
      rows, groups, y, stride,
      [&](int64_t g0, int64_t count) {
        for (int j = 0; j < kTokens; ++j)
          for (int64_t i = 0; i < count; ++i)
            scale[j][i] = Lut::template table<kBits>(codebook, x_rot + j * stride + (g0 + i) * cq_group, tables[j][i]);
      },
      [&](int64_t at, int64_t, int64_t count, float(*out)[CqLut16::tile]) {
        const uint8_t *tile = packed + CqLut16::tile_group_bytes(kBits) * at;
        token_runs<2>(kTokens, [&](auto tokens, int64_t j) {
          Lut::template tile<kBits, tokens>(tile, norms + CqLut16::tile * at, count, tables + j, scale + j, out + j);
        });
      });
}

/// The fast mode's needle.cq_matmul for n tokens (token j's x_rot and y j·stride floats after
/// token 0's) on a CQ2 or CQ4 matrix in the CqLut16 layout (CqLutDword for CqLutAvx512Vnni), on the kernels `Lut`: runs
/// of Lut::run_tokens<bits> tokens (a power of two) and shorter ones for the rest (token_runs), each streaming the
/// weights once.
template <typename Lut>
inline void cqlut_matmul_on(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits, int64_t rows,
                            int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
  const int64_t groups = cq_groups(cols);
  auto at_width = [&](auto width) {
    token_runs<Lut::template run_tokens<width>>(n, [&](auto tokens, int64_t j) {
      cqlut_tokens<Lut, width, tokens>(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride,
                                       stride);
    });
  };
  if (bits == 2)
    at_width(std::integral_constant<int, 2>{});
  else
    at_width(std::integral_constant<int, 4>{});
}

/// The fast mode's tables in plain C++ (cqlut_group_table), for the kernels without their own;
/// their runs of 2 tokens keep a run's tables (16 KB for CQ4) small for small stacks.
struct CqLutScalarTables {
  template <int kBits> static constexpr int run_tokens = 2;
  template <int kBits> static float table(const float *codebook, const float *x, int8_t *table) {
    return cqlut_group_table(codebook, kBits, x, table);
  }
};

/// The fast mode's kernels in plain C++: a row's integer sum of looked-up entries per group,
/// times the group's scale and the row's norm. (The padding rows of a last tile have zero codes
/// and norms: their sums are computed and dropped.)
struct CqLutPortable : CqLutScalarTables {
  /// out[j][r] = Σ_g scale[j][g] n[r,g] Σ_u tables[j][g][16u + code(r, u)] over a tile's `count`
  /// groups.
  template <int kBits, int kTokens>
  static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count, const CqLutBlockTables<kBits> *tables,
                   const CqLutBlockScales *scale, float (*out)[CqLut16::tile]) {
    for (int j = 0; j < kTokens; ++j)
      for (int64_t r = 0; r < CqLut16::tile; ++r) {
        float acc = 0.0f;
        for (int64_t g = 0; g < count; ++g) {
          const uint8_t *p = tile + CqLut16::tile_group_bytes(kBits) * g;
          int32_t sum = 0;
          for (int64_t u = 0; u < 32 * kBits; ++u)
            sum += tables[j][g][16 * u + cqlut_code<CqLut16>(p, r, u)];
          acc += static_cast<float>(sum) * (scale[j][g] * half_to_float(norms[CqLut16::tile * g + r]));
        }
        out[j][r] = acc;
      }
  }
};

#if NEEDLE_RT_NEON_KERNELS
/// The fast mode's kernels with aarch64's NEON (every aarch64 CPU has it): CqLutPortable's sums,
/// the tables built by cqlut_group_table. Per 16-byte half h of a 32-byte chunk (16 rows, units
/// 4q + h in the low nibbles and 4q + 2 + h in the high ones): two 16-entry lookups (tbl), added
/// in pairs into 16-bit sums per row (a row's whole group: at most 127·128 = 16,256 in magnitude,
/// no overflow); per group, the sums to float times scale × norm.
struct CqLutNeon : CqLutScalarTables {
  template <int kBits, int kTokens>
  static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count, const CqLutBlockTables<kBits> *tables,
                   const CqLutBlockScales *scale, float (*out)[CqLut16::tile]) {
    constexpr int kChunks = 8 * kBits;
    const uint8x16_t nibble = vdupq_n_u8(15);
    float32x4_t sums[kTokens][4];
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        sums[j][i] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < count; ++g, tile += 32 * kChunks) {
      int16x8_t acc[kTokens][2]; // rows 0..7, 8..15
      for (int j = 0; j < kTokens; ++j)
        acc[j][0] = acc[j][1] = vdupq_n_s16(0);
      for (int q = 0; q < kChunks; ++q)
        for (int h = 0; h < 2; ++h) {
          const uint8x16_t codes = vld1q_u8(tile + 32 * q + 16 * h);
          const uint8x16_t low = vandq_u8(codes, nibble), high = vshrq_n_u8(codes, 4);
          for (int j = 0; j < kTokens; ++j) {
            const int8_t *t = tables[j][g] + 64 * q + 16 * h; // unit 4q + h; 4q + 2 + h 32 bytes on
            const int8x16_t r1 = vqtbl1q_s8(vld1q_s8(t), low), r2 = vqtbl1q_s8(vld1q_s8(t + 32), high);
            acc[j][0] = vaddq_s16(acc[j][0], vaddl_s8(vget_low_s8(r1), vget_low_s8(r2)));
            acc[j][1] = vaddq_s16(acc[j][1], vaddl_high_s8(r1, r2));
          }
        }
      float32x4_t n[4];
      for (int i = 0; i < 4; ++i)
        n[i] = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(norms + 16 * g + 4 * i)));
      for (int j = 0; j < kTokens; ++j)
        for (int i = 0; i < 4; ++i) { // rows 4i..4i+3
          const int16x4_t part = i % 2 ? vget_high_s16(acc[j][i / 2]) : vget_low_s16(acc[j][i / 2]);
          sums[j][i] = vfmaq_f32(sums[j][i], vcvtq_f32_s32(vmovl_s16(part)), vmulq_n_f32(n[i], scale[j][g]));
        }
    }
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        vst1q_f32(out[j] + 4 * i, sums[j][i]);
  }
};
#endif

#if NEEDLE_RT_WASM_KERNELS
// The fast mode's kernels with wasm simd128. Their own target attribute lets the runtime compile
// for wasm32 without -msimd128: the object backend calls them only when the target has simd128
// (codegen/Select), and C++ compiled with -msimd128 reaches them through the #if in cqlut_matmul.

/// CqLutNeon's sums with simd128: per 16 bytes of a chunk, two 16-entry lookups (i8x16.swizzle),
/// widened to 16 bits and added per row (at most 16,256 in magnitude, as NEON's); per group, the sums to float times
/// scale × norm (the norms converted one by one: simd128 has no fp16).
struct CqLutSimd128 : CqLutScalarTables {
  template <int kBits, int kTokens>
  NEEDLE_RT_SIMD128 static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                     const CqLutBlockTables<kBits> *tables, const CqLutBlockScales *scale,
                                     float (*out)[CqLut16::tile]) {
    constexpr int kChunks = 8 * kBits;
    const v128_t nibble = wasm_u8x16_splat(15);
    v128_t sums[kTokens][4];
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        sums[j][i] = wasm_f32x4_splat(0.0f);
    for (int64_t g = 0; g < count; ++g, tile += 32 * kChunks) {
      v128_t acc[kTokens][2]; // rows 0..7, 8..15, as 16-bit sums
      for (int j = 0; j < kTokens; ++j)
        acc[j][0] = acc[j][1] = wasm_i16x8_splat(0);
      for (int q = 0; q < kChunks; ++q)
        for (int h = 0; h < 2; ++h) {
          const v128_t codes = wasm_v128_load(tile + 32 * q + 16 * h);
          const v128_t low = wasm_v128_and(codes, nibble), high = wasm_u8x16_shr(codes, 4);
          for (int j = 0; j < kTokens; ++j) {
            const int8_t *t = tables[j][g] + 64 * q + 16 * h; // unit 4q + h; 4q + 2 + h 32 bytes on
            const v128_t r1 = wasm_i8x16_swizzle(wasm_v128_load(t), low);
            const v128_t r2 = wasm_i8x16_swizzle(wasm_v128_load(t + 32), high);
            acc[j][0] = wasm_i16x8_add(
                acc[j][0], wasm_i16x8_add(wasm_i16x8_extend_low_i8x16(r1), wasm_i16x8_extend_low_i8x16(r2)));
            acc[j][1] = wasm_i16x8_add(
                acc[j][1], wasm_i16x8_add(wasm_i16x8_extend_high_i8x16(r1), wasm_i16x8_extend_high_i8x16(r2)));
          }
        }
      v128_t n[4];
      for (int i = 0; i < 4; ++i) {
        const uint16_t *h = norms + 16 * g + 4 * i;
        n[i] = wasm_f32x4_make(half_to_float(h[0]), half_to_float(h[1]), half_to_float(h[2]), half_to_float(h[3]));
      }
      for (int j = 0; j < kTokens; ++j)
        for (int i = 0; i < 4; ++i) { // rows 4i..4i+3
          const v128_t part =
              i % 2 ? wasm_i32x4_extend_high_i16x8(acc[j][i / 2]) : wasm_i32x4_extend_low_i16x8(acc[j][i / 2]);
          const v128_t weight = wasm_f32x4_mul(n[i], wasm_f32x4_splat(scale[j][g]));
          sums[j][i] = wasm_f32x4_add(sums[j][i], wasm_f32x4_mul(wasm_f32x4_convert_i32x4(part), weight));
        }
    }
    for (int j = 0; j < kTokens; ++j)
      for (int i = 0; i < 4; ++i)
        wasm_v128_store(out[j] + 4 * i, sums[j][i]);
  }
};

/// cqlut_matmul with simd128 (bits 2 or 4).
NEEDLE_RT_SIMD128 inline void cqlut_matmul_simd128(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                   int bits, int64_t rows, int64_t cols, const float *x_rot, float *y,
                                                   int64_t stride, int64_t n) {
  cqlut_matmul_on<CqLutSimd128>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}
#endif

/// The fast mode's needle.cq_matmul in plain C++ (cqlut_matmul_on CqLutPortable).
inline void cqlut_matmul_portable(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                                  int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
  cqlut_matmul_on<CqLutPortable>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

/// The exact mode's needle.cq_matmul for n tokens on a CQ2 (or CQ4) matrix in the CqLut16 layout,
/// in plain C++ (cq_matmul_in CqLut16Rows).
inline void cqlut_exact_matmul_portable(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                                        int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride,
                                        int64_t n) {
  cq_matmul_in(CqLut16Rows{bits}, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
}

#if NEEDLE_RT_X86_KERNELS
// AVX2 kernels. Each function carries its own target attribute (isa.h), so the runtime compiles
// without -mavx2: the object backend calls them only for a CPU with AVX2, FMA and F16C
// (codegen/Select, from runtime/needle_kernels.def), and C++ compiled for such a CPU reaches them
// through the dispatchers' #if NEEDLE_RT_TARGETS_AVX2. On CqX8 (CQ4), a block of `count` groups of
// row r starts 64·count·r bytes into the block.

/// The largest of a vector's 8 lanes.
NEEDLE_RT_AVX2 inline float avx2_lane_max(__m256 v) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

/// The sum of a vector's 8 lanes.
NEEDLE_RT_AVX2 inline float avx2_lane_sum(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

/// 32 bytes, unaligned.
NEEDLE_RT_AVX2 inline __m256i load256(const uint8_t *words) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(words));
}

/// The 8 lanes' sums of 8 vectors: lane i of the result is the sum of v[i]'s lanes.
NEEDLE_RT_AVX2 inline __m256 avx2_lane_sums8(const __m256 v[8]) {
  const __m256 a0 = _mm256_hadd_ps(v[0], v[1]), a1 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 a2 = _mm256_hadd_ps(v[4], v[5]), a3 = _mm256_hadd_ps(v[6], v[7]);
  const __m256 b0 = _mm256_hadd_ps(a0, a1), b1 = _mm256_hadd_ps(a2, a3); // halves of v[0..3], v[4..7]
  return _mm256_add_ps(_mm256_permute2f128_ps(b0, b1, 0x20), _mm256_permute2f128_ps(b0, b1, 0x31));
}

/// The CQ4 codebook as byte planes for cq4x8_decode: plane k holds byte k of each of the 16
/// entries, in both 128-bit halves.
struct Cq4Planes {
  __m256i plane[4];
};

NEEDLE_RT_AVX2 inline Cq4Planes cq4x8_planes(const float *c) {
  Cq4Planes p;
  for (int k = 0; k < 4; ++k) {
    alignas(32) uint8_t bytes[32];
    for (int i = 0; i < 16; ++i) {
      uint32_t bits;
      std::memcpy(&bits, c + i, 4);
      bytes[i] = bytes[16 + i] = static_cast<uint8_t>(bits >> (8 * k));
    }
    p.plane[k] = _mm256_load_si256(reinterpret_cast<const __m256i *>(bytes));
  }
  return p;
}

/// The floats whose 4 bytes are looked up in byte planes p0..p3 (plane k: byte k of 16 floats,
/// per 128-bit half) by the 32 indices of `indices`, one per byte (below 16): vpshufb looks each
/// plane up, two rounds of unpacking interleave the planes' bytes into floats. Within 128-bit
/// halves, so out[k] lane l holds the entry of byte 4k + l (l < 4) or 16 + 4k + l - 4 (l >= 4).
NEEDLE_RT_AVX2 inline void avx2_plane_lookup(__m256i p0, __m256i p1, __m256i p2, __m256i p3, __m256i indices,
                                             __m256 out[4]) {
  const __m256i b0 = _mm256_shuffle_epi8(p0, indices), b1 = _mm256_shuffle_epi8(p1, indices);
  const __m256i b2 = _mm256_shuffle_epi8(p2, indices), b3 = _mm256_shuffle_epi8(p3, indices);
  const __m256i low01 = _mm256_unpacklo_epi8(b0, b1), high01 = _mm256_unpackhi_epi8(b0, b1);
  const __m256i low23 = _mm256_unpacklo_epi8(b2, b3), high23 = _mm256_unpackhi_epi8(b2, b3);
  out[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(low01, low23));
  out[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(low01, low23));
  out[2] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(high01, high23));
  out[3] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(high01, high23));
}

/// The indices of nibble h (0 low, 1 high) of a vector of CQ4 words, one per byte.
NEEDLE_RT_AVX2 inline __m256i cq4x8_nibbles(__m256i words, int h) {
  const __m256i low = _mm256_set1_epi8(15);
  return _mm256_and_si256(h ? _mm256_srli_epi16(words, 4) : words, low);
}

/// c[index] for 32 indices, one per byte (avx2_plane_lookup on the codebook's planes: 16 entries,
/// so one vpshufb per plane): out[k] lane l holds the entry of byte cq4_byte(k, l), the order the
/// CqX8 layout stores CQ4 columns in.
NEEDLE_RT_AVX2 inline void cq4x8_decode(const Cq4Planes &p, __m256i indices, __m256 out[4]) {
  avx2_plane_lookup(p.plane[0], p.plane[1], p.plane[2], p.plane[3], indices, out);
}

/// Columns 32q..32q+31 of a CQ4 group (vector q/2, nibble q%2), decoded as 4 vectors of 8.
NEEDLE_RT_AVX2 inline void cq4x8_decode_quarter(const Cq4Planes &p, const uint8_t *group, int q, __m256 out[4]) {
  cq4x8_decode(p, cq4x8_nibbles(load256(group + 32 * (q / 2)), q % 2), out);
}

/// One CQ4 row's Σ over a block of `count` groups for one token (x at the block), as 8 partial
/// sums: a group's 4 chains (one per decoded vector) are scaled by its norm at its end, as byte
/// planes cannot be scaled.
NEEDLE_RT_AVX2 inline __m256 cqx8_row_block_avx2(const uint8_t *row, const uint16_t *norms, int64_t count,
                                                 const Cq4Planes &p, const float *x) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t g = 0; g < count; ++g) {
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      __m256 w[4];
      cq4x8_decode_quarter(p, row + 64 * g, q, w);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k)
        s[k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x + cq_group * g + 32 * q + 8 * k), s[k]);
    }
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3]));
    acc = _mm256_fmadd_ps(sum, _mm256_set1_ps(_cvtsh_ss(norms[g])), acc);
  }
  return acc;
}

/// cqx8_matmul for one token on a row kernel `Rows`: block by block, kernel.at_block(x, count)
/// (the block's inputs), then kernel.rows8 adding 8 rows' sums over the block into y (reduced at
/// once), and kernel.row returning the sum of each row left over.
template <typename Rows>
inline void cqx8_matvec_on(Rows &kernel, const uint8_t *packed, const uint16_t *norms, int64_t rows, int64_t groups,
                           const float *x_rot, float *y) {
  for (int64_t r = 0; r < rows; ++r)
    y[r] = 0.0f;
  for (int64_t g = 0; g < groups; g += CqX8::block) {
    const int64_t count = cq_block_count(groups, g, CqX8::block);
    kernel.at_block(x_rot + g * cq_group, count);
    const uint8_t *block = packed + CqX8::group_bytes * g * rows; // row r's groups are count·r groups on
    const uint16_t *block_norms = norms + g * rows;
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8)
      kernel.rows8(block + CqX8::group_bytes * count * r, block_norms + count * r, count, y + r);
    for (; r < rows; ++r)
      y[r] += kernel.row(block + CqX8::group_bytes * count * r, block_norms + count * r, count);
  }
}

/// The AVX2 row kernel of cqx8_matvec_on: rows by cqx8_row_block_avx2 (the codebook's byte planes).
struct Cq4RowsAvx2 {
  Cq4Planes planes;
  const float *x = nullptr;
  NEEDLE_RT_AVX2 void at_block(const float *block_x, int64_t) { x = block_x; }
  NEEDLE_RT_AVX2 void rows8(const uint8_t *row, const uint16_t *norms, int64_t count, float *y) const {
    __m256 sums[8];
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; ++i)
      sums[i] = cqx8_row_block_avx2(row + CqX8::group_bytes * count * i, norms + count * i, count, planes, x);
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), avx2_lane_sums8(sums)));
  }
  NEEDLE_RT_AVX2 float row(const uint8_t *row, const uint16_t *norms, int64_t count) const {
    return avx2_lane_sum(cqx8_row_block_avx2(row, norms, count, planes, x));
  }
};

/// cqx8_matmul_avx2 for one token.
NEEDLE_RT_AVX2 inline void cqx8_matvec_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                            int64_t rows, int64_t groups, const float *x_rot, float *y) {
  Cq4RowsAvx2 kernel{cq4x8_planes(codebook)};
  cqx8_matvec_on(kernel, packed, norms, rows, groups, x_rot, y);
}

/// One CQ4 row's Σ over a block of `count` groups, added to y[j·stride] for kTokens tokens (x at
/// the block, token j's j·stride floats on): each 32 columns are decoded once for all the tokens
/// and scaled by their group's norm (a row's 4 decoded vectors and the sums fill the registers).
template <int kTokens>
NEEDLE_RT_AVX2 inline void cq4x8_block_tokens_avx2(const uint8_t *row, const uint16_t *norms, int64_t count,
                                                   const Cq4Planes &p, const float *x, int64_t stride, float *y) {
  __m256 s[kTokens];
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j)
    s[j] = _mm256_setzero_ps();
  for (int64_t g = 0; g < count; ++g) {
    const __m256 norm = _mm256_set1_ps(_cvtsh_ss(norms[g]));
    for (int q = 0; q < 4; ++q) {
      __m256 w[4];
      cq4x8_decode_quarter(p, row + 64 * g, q, w);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256 weights = _mm256_mul_ps(w[k], norm);
        const float *xk = x + cq_group * g + 32 * q + 8 * k;
#pragma GCC unroll 8
        for (int j = 0; j < kTokens; ++j)
          s[j] = _mm256_fmadd_ps(weights, _mm256_loadu_ps(xk + j * stride), s[j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j)
    y[j * stride] += avx2_lane_sum(s[j]);
}

/// kTokens tokens' y (token j's j·stride floats after token 0's), block by block: the tokens'
/// inputs in a block (8 KB for 4) stay in L1 while every row passes over them.
template <int kTokens>
NEEDLE_RT_AVX2 inline void cqx8_tokens_avx2(const uint8_t *packed, const uint16_t *norms, const Cq4Planes &t,
                                            int64_t rows, int64_t groups, const float *x_rot, float *y,
                                            int64_t stride) {
  for (int64_t j = 0; j < kTokens; ++j)
    for (int64_t r = 0; r < rows; ++r)
      y[j * stride + r] = 0.0f;
  for (int64_t g = 0; g < groups; g += CqX8::block) {
    const int64_t count = cq_block_count(groups, g, CqX8::block);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = g * rows + count * r;
      cq4x8_block_tokens_avx2<kTokens>(packed + CqX8::group_bytes * at, norms + at, count, t, x_rot + g * cq_group,
                                       stride, y + r);
    }
  }
}

/// A CQ matvec kernel's one-token entry on a re-laid layout (cqx8_matvec_avx2, cq2_exact_matvec_avx2,
/// their AVX-512 twins).
using CqLayoutMatvec = void (*)(const uint8_t *packed, const uint16_t *norms, const float *codebook, int64_t rows,
                                int64_t groups, const float *x_rot, float *y);

/// cqx8_matmul with AVX2, FMA and F16C (bits 4), one token alone on `matvec`: runs of 4 tokens,
/// then one of 2 as needed.
NEEDLE_RT_AVX2 inline void cqx8_matmul_with(CqLayoutMatvec matvec, const uint8_t *packed, const uint16_t *norms,
                                            const float *codebook, int64_t rows, int64_t cols, const float *x_rot,
                                            float *y, int64_t stride, int64_t n) {
  const Cq4Planes t = cq4x8_planes(codebook);
  const int64_t groups = cq_groups(cols);
  token_runs<4>(n, [&](auto tokens, int64_t j) {
    if constexpr (tokens == 1)
      matvec(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride);
    else
      cqx8_tokens_avx2<tokens>(packed, norms, t, rows, groups, x_rot + j * stride, y + j * stride, stride);
  });
}

/// cqx8_matmul with AVX2, FMA and F16C (bits 4).
NEEDLE_RT_AVX2 inline void cqx8_matmul_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                            int /*bits*/, int64_t rows, int64_t cols, const float *x_rot, float *y,
                                            int64_t stride, int64_t n) {
  cqx8_matmul_with(cqx8_matvec_avx2, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
}

// AVX2 kernels on the CqLut16 layout (the fast mode, --activations int8).

/// The codebook as cqlut_entries_avx2 wants it: CQ2, a = c[k & 3] and b = c[k >> 2] for
/// entries k = 0..7 (b) and 8..15 (b_high); CQ4, c[0..8) (b) and c[8..16) (b_high).
struct CqLutCodebook {
  __m256 a, b, b_high;
};

template <int kBits> NEEDLE_RT_AVX2 inline CqLutCodebook cqlut_codebook_avx2(const float *c) {
  if constexpr (kBits == 2)
    return {_mm256_setr_ps(c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3]),
            _mm256_setr_ps(c[0], c[0], c[0], c[0], c[1], c[1], c[1], c[1]),
            _mm256_setr_ps(c[2], c[2], c[2], c[2], c[3], c[3], c[3], c[3])};
  else
    return {_mm256_setzero_ps(), _mm256_loadu_ps(c), _mm256_loadu_ps(c + 8)};
}

/// Unit u's 16 table entries (cqlut_group_table) as entries 0..7 (e0) and 8..15 (e1).
template <int kBits>
NEEDLE_RT_AVX2 inline void cqlut_entries_avx2(const CqLutCodebook &c, const float *x, int u, __m256 &e0, __m256 &e1) {
  if constexpr (kBits == 2) {
    const __m256 x0 = _mm256_broadcast_ss(x + 2 * u), x1 = _mm256_broadcast_ss(x + 2 * u + 1);
    const __m256 first = _mm256_mul_ps(c.a, x0);
    e0 = _mm256_add_ps(first, _mm256_mul_ps(c.b, x1));
    e1 = _mm256_add_ps(first, _mm256_mul_ps(c.b_high, x1));
  } else {
    const __m256 xu = _mm256_broadcast_ss(x + u);
    e0 = _mm256_mul_ps(c.b, xu), e1 = _mm256_mul_ps(c.b_high, xu);
  }
}

/// cqlut_group_largest with AVX2, 16 inputs at a time (CQ2: a unit's two products are
/// neighbours, which a horizontal add sums; which unit lands in which lane does not matter).
template <int kBits> NEEDLE_RT_AVX2 inline float cqlut_group_largest_avx2(const float *codebook, const float *x) {
  __m256 low = _mm256_set1_ps(codebook[0]), high = low;
  for (int k = 1; k < (1 << kBits); ++k) {
    low = _mm256_min_ps(low, _mm256_set1_ps(codebook[k]));
    high = _mm256_max_ps(high, _mm256_set1_ps(codebook[k]));
  }
  __m256 largest = _mm256_setzero_ps();
  for (int i = 0; i < cq_group; i += 16) {
    __m256 top[2], bottom[2];
    for (int h = 0; h < 2; ++h) {
      const __m256 in = _mm256_loadu_ps(x + i + 8 * h), a = _mm256_mul_ps(low, in), b = _mm256_mul_ps(high, in);
      top[h] = _mm256_max_ps(a, b);
      bottom[h] = _mm256_min_ps(a, b);
    }
    if constexpr (kBits == 2) {
      top[0] = top[1] = _mm256_hadd_ps(top[0], top[1]);
      bottom[0] = bottom[1] = _mm256_hadd_ps(bottom[0], bottom[1]);
    }
    for (int h = 0; h < 2; ++h)
      largest = _mm256_max_ps(largest, _mm256_max_ps(top[h], _mm256_sub_ps(_mm256_setzero_ps(), bottom[h])));
  }
  return avx2_lane_max(largest);
}

/// cqlut_group_table with AVX2: a unit's 16 entries as two 8-float vectors, scaled by the largest
/// (cqlut_group_largest_avx2), rounded and narrowed to bytes.
template <int kBits>
NEEDLE_RT_AVX2 inline float cqlut_group_table_avx2(const float *codebook, const float *x, int8_t *table) {
  constexpr int kUnits = 32 * kBits;
  const CqLutCodebook c = cqlut_codebook_avx2<kBits>(codebook);
  const float top = cqlut_group_largest_avx2<kBits>(codebook, x);
  const __m256 inverse = _mm256_set1_ps(top > 0.0f ? 127.0f / top : 0.0f);
  for (int u = 0; u < kUnits; ++u) {
    __m256 e0, e1;
    cqlut_entries_avx2<kBits>(c, x, u, e0, e1);
    // Round to nearest even (the default MXCSR mode), then narrow in order: packs interleaves
    // the 128-bit halves, the permute puts entries 0..7 before 8..15.
    const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(e0, inverse)),
                  q1 = _mm256_cvtps_epi32(_mm256_mul_ps(e1, inverse));
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);
    const __m128i bytes = _mm_packs_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(table + 16 * u), bytes);
  }
  return top / 127.0f;
}

/// The fast mode's tables on x86-64 (cqlut_group_table_avx2), for CqLutAvx2 and CqLutAvx512Vnni;
/// runs of up to 8 CQ2 tokens or 4 CQ4 ones (32 KB of tables on the stack, which a thread's stack
/// holds on x86-64, even musl's 128 KB).
struct CqLutAvx2Tables {
  template <int kBits> static constexpr int run_tokens = 16 / kBits;
  template <int kBits> NEEDLE_RT_AVX2 static float table(const float *codebook, const float *x, int8_t *table) {
    return cqlut_group_table_avx2<kBits>(codebook, x, table);
  }
};

/// The fast mode's kernels with AVX2 (cqlut_matmul_on) on CqLut16.
struct CqLutAvx2 : CqLutAvx2Tables {
  /// CqLutPortable::tile's sums. Per 32-byte chunk (16 rows x 4 units): the low and
  /// high nibbles index two byte shuffles of 4 units' tables; unpacking their results byte by byte
  /// puts each row's two entries side by side, and vpmaddubsw by ones adds them into 16-bit sums
  /// (at most 2·127·32·bits/4 = 8128 in magnitude: no overflow). Per group, the 16-bit sums
  /// become floats scaled by the group's scale and norms.
  template <int kBits, int kTokens>
  NEEDLE_RT_AVX2 static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                  const CqLutBlockTables<kBits> *tables, const CqLutBlockScales *scale,
                                  float (*out)[CqLut16::tile]) {
    constexpr int kChunks = 8 * kBits;
    const __m256i nibble = _mm256_set1_epi8(15), ones = _mm256_set1_epi8(1);
    __m256 sums[kTokens][2];
#pragma GCC unroll 4
    for (int j = 0; j < kTokens; ++j)
      sums[j][0] = sums[j][1] = _mm256_setzero_ps();
    for (int64_t g = 0; g < count; ++g, tile += 32 * kChunks) {
      __m256i acc[kTokens][2];
#pragma GCC unroll 4
      for (int j = 0; j < kTokens; ++j)
        acc[j][0] = acc[j][1] = _mm256_setzero_si256();
      for (int q = 0; q < kChunks; ++q) {
        const __m256i codes = load256(tile + 32 * q);
        const __m256i low = _mm256_and_si256(codes, nibble),
                      high = _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble);
#pragma GCC unroll 4
        for (int j = 0; j < kTokens; ++j) {
          const int8_t *t = tables[j][g] + 64 * q;
          const __m256i r1 = _mm256_shuffle_epi8(load256(reinterpret_cast<const uint8_t *>(t)), low);
          const __m256i r2 = _mm256_shuffle_epi8(load256(reinterpret_cast<const uint8_t *>(t + 32)), high);
          acc[j][0] = _mm256_add_epi16(acc[j][0], _mm256_maddubs_epi16(ones, _mm256_unpacklo_epi8(r1, r2)));
          acc[j][1] = _mm256_add_epi16(acc[j][1], _mm256_maddubs_epi16(ones, _mm256_unpackhi_epi8(r1, r2)));
        }
      }
      const __m256 n0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(norms + 16 * g)));
      const __m256 n1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(norms + 16 * g + 8)));
#pragma GCC unroll 4
      for (int j = 0; j < kTokens; ++j) {
        const __m256 s = _mm256_set1_ps(scale[j][g]);
#pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) { // rows 8·half..+7; its two 128-bit lanes hold two units
          const __m128i rows =
              _mm_add_epi16(_mm256_castsi256_si128(acc[j][half]), _mm256_extracti128_si256(acc[j][half], 1));
          const __m256 total = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(rows));
          sums[j][half] = _mm256_fmadd_ps(total, _mm256_mul_ps(half ? n1 : n0, s), sums[j][half]);
        }
      }
    }
#pragma GCC unroll 4
    for (int j = 0; j < kTokens; ++j) {
      _mm256_storeu_ps(out[j], sums[j][0]);
      _mm256_storeu_ps(out[j] + 8, sums[j][1]);
    }
  }
};

/// cqlut_matmul with AVX2, FMA and F16C (bits 2 or 4).
NEEDLE_RT_AVX2 inline void cqlut_matmul_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                             int bits, int64_t rows, int64_t cols, const float *x_rot, float *y,
                                             int64_t stride, int64_t n) {
  cqlut_matmul_on<CqLutAvx2>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

// The exact mode's CQ2 on the CqLut16 layout with AVX2: float pair tables as byte planes.

/// A CQ2 group's pair tables as cq2_exact_tile_avx2 reads them: unit u's 16 float entries
/// c[k & 3]·x[2u] + c[k >> 2]·x[2u + 1] (cqlut_entries_avx2) cut into their 4 bytes, byte b of
/// units 4q + 2h and 4q + 2h + 1 in the two 128-bit halves of plane 8q + 4h + b: the halves that
/// chunk q's nibble h indexes (CqLut16). 4 KB per group.
using Cq2PairPlanes = __m256i[128];

NEEDLE_RT_AVX2 inline void cq2_pair_planes_avx2(const CqLutCodebook &c, const float *x, __m256i *planes) {
  // Per 128-bit half of 4 floats: dword b gathers byte b of each.
  const __m256i by_byte = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9,
                                           13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int i = 0; i < 32; ++i, planes += 4) { // units 2i (low halves) and 2i + 1 (high halves)
    __m256 a0, a1, b0, b1;
    cqlut_entries_avx2<2>(c, x, 2 * i, a0, a1);
    cqlut_entries_avx2<2>(c, x, 2 * i + 1, b0, b1);
    // Entries 4m..4m+3 of both units, then a 4 x 4 transpose of dwords per half.
    const __m256i e0 = _mm256_shuffle_epi8(_mm256_castps_si256(_mm256_permute2f128_ps(a0, b0, 0x20)), by_byte);
    const __m256i e1 = _mm256_shuffle_epi8(_mm256_castps_si256(_mm256_permute2f128_ps(a0, b0, 0x31)), by_byte);
    const __m256i e2 = _mm256_shuffle_epi8(_mm256_castps_si256(_mm256_permute2f128_ps(a1, b1, 0x20)), by_byte);
    const __m256i e3 = _mm256_shuffle_epi8(_mm256_castps_si256(_mm256_permute2f128_ps(a1, b1, 0x31)), by_byte);
    const __m256i t0 = _mm256_unpacklo_epi32(e0, e1), t1 = _mm256_unpackhi_epi32(e0, e1);
    const __m256i t2 = _mm256_unpacklo_epi32(e2, e3), t3 = _mm256_unpackhi_epi32(e2, e3);
    _mm256_store_si256(planes, _mm256_unpacklo_epi64(t0, t2));
    _mm256_store_si256(planes + 1, _mm256_unpackhi_epi64(t0, t2));
    _mm256_store_si256(planes + 2, _mm256_unpacklo_epi64(t1, t3));
    _mm256_store_si256(planes + 3, _mm256_unpackhi_epi64(t1, t3));
  }
}

/// One token's sums of one CqLut16 tile (16 CQ2 rows) over a block of `count` groups, in float:
/// per 32-byte chunk and nibble, 16 rows x 2 units' entries looked up in the pair tables' planes
/// (avx2_plane_lookup: 3 shuffles per 8 entries, and an add, for 16 weights) and added; per
/// group, each row's two halves added and scaled by its norm. 12 shuffles and 4 adds per 64
/// weights, against 8 lookups, 8 shifts and 8 FMAs for a codebook lookup per weight
/// (docs/performance-log.md).
NEEDLE_RT_AVX2 inline void cq2_exact_tile_avx2(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                               const Cq2PairPlanes *planes, float *out) {
  __m256 low_rows = _mm256_setzero_ps(), high_rows = _mm256_setzero_ps();
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(2)) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    // acc[k]: rows 4k..4k+3 of the even units | of the odd units
    for (int q = 0; q < 16; ++q) {
      const __m256i codes = load256(tile + 32 * q);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i *p = planes[g] + 8 * q + 4 * h;
        __m256 entries[4];
        avx2_plane_lookup(_mm256_load_si256(p), _mm256_load_si256(p + 1), _mm256_load_si256(p + 2),
                          _mm256_load_si256(p + 3), cq4x8_nibbles(codes, h), entries);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
          acc[k] = _mm256_add_ps(acc[k], entries[k]);
      }
    }
    const __m256 n0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(norms + 16 * g)));
    const __m256 n1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(norms + 16 * g + 8)));
    const __m256 low = _mm256_add_ps(_mm256_permute2f128_ps(acc[0], acc[1], 0x20),
                                     _mm256_permute2f128_ps(acc[0], acc[1], 0x31)); // rows 0..7
    const __m256 high = _mm256_add_ps(_mm256_permute2f128_ps(acc[2], acc[3], 0x20),
                                      _mm256_permute2f128_ps(acc[2], acc[3], 0x31)); // rows 8..15
    low_rows = _mm256_fmadd_ps(low, n0, low_rows);
    high_rows = _mm256_fmadd_ps(high, n1, high_rows);
  }
  _mm256_storeu_ps(out, low_rows);
  _mm256_storeu_ps(out + 8, high_rows);
}

/// kTokens tokens' sums of 8 rows (half `half` of a CqLut16 tile of 16 CQ2 rows) over a block of
/// `count` groups (x at the block, token j's j·stride floats on), decoded and multiplied: bytes
/// 8·half..8·half + 7 of a chunk half hold 8 rows' codes of 4 columns (two units), one per 2 bits; widened to
/// 32 bits, shifted and looked up in the codebook (vpermilps reads a lane's low 2 bits) they give
/// the rows' weights of one column, scaled by the rows' norms once for all the tokens.
template <int kTokens>
NEEDLE_RT_AVX2 inline void cq2_exact_rows8_avx2(const uint8_t *tile, const uint16_t *norms, int64_t count, int half,
                                                const float *codebook, const float *x, int64_t stride,
                                                float (*out)[CqLut16::tile]) {
  const __m256 c = _mm256_broadcast_ps(reinterpret_cast<const __m128 *>(codebook)); // in both halves
  __m256 acc[kTokens];
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j)
    acc[j] = _mm256_setzero_ps();
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(2), x += cq_group) {
    const __m256 norm = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(norms + 16 * g + 8 * half)));
    for (int q = 0; q < 16; ++q)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) { // units 4q + h (low nibbles) and 4q + 2 + h (high)
        const __m256i codes =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(tile + 32 * q + 16 * h + 8 * half)));
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) { // columns 8q + 2h + s (s < 2) and 8q + 4 + 2h + s - 2
          const __m256 w = _mm256_mul_ps(_mm256_permutevar_ps(c, _mm256_srli_epi32(codes, 2 * s)), norm);
          const float *column = x + 8 * q + 2 * h + (s < 2 ? s : s + 2);
#pragma GCC unroll 8
          for (int j = 0; j < kTokens; ++j)
            acc[j] = _mm256_fmadd_ps(w, _mm256_broadcast_ss(column + j * stride), acc[j]);
        }
      }
  }
#pragma GCC unroll 8
  for (int j = 0; j < kTokens; ++j)
    _mm256_storeu_ps(out[j] + 8 * half, acc[j]);
}

/// cqlut_exact_matmul_avx2 for one CQ2 token, on the pair tables: block by block, the tables of
/// the block's groups (16 KB), then every tile's sums over them.
NEEDLE_RT_AVX2 inline void cq2_exact_matvec_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                 int64_t rows, int64_t groups, const float *x_rot, float *y) {
  alignas(32) Cq2PairPlanes planes[CqLut16::block];
  const CqLutCodebook c = cqlut_codebook_avx2<2>(codebook);
  cqlut_each_tile<1>(
      rows, groups, y, 0,
      [&](int64_t g0, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          cq2_pair_planes_avx2(c, x_rot + (g0 + i) * cq_group, planes[i]);
      },
      [&](int64_t at, int64_t, int64_t count, float(*out)[CqLut16::tile]) {
        cq2_exact_tile_avx2(packed + CqLut16::tile_group_bytes(2) * at, norms + CqLut16::tile * at, count, planes,
                            out[0]);
      });
}

/// cqlut_exact_matmul_avx2 for kTokens CQ2 tokens (token j's x_rot and y j·stride floats after
/// token 0's), decoded and multiplied: each tile's rows 8 at a time, each column's weights decoded
/// once for all the tokens, whose inputs in a block (2 KB each) stay in L1.
template <int kTokens>
NEEDLE_RT_AVX2 inline void cq2_exact_tokens_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                 int64_t rows, int64_t groups, const float *x_rot, float *y,
                                                 int64_t stride) {
  cqlut_each_tile<kTokens>(
      rows, groups, y, stride, [](int64_t, int64_t) {},
      [&](int64_t at, int64_t g0, int64_t count, float(*out)[CqLut16::tile]) {
        for (int half = 0; half < 2; ++half)
          cq2_exact_rows8_avx2<kTokens>(packed + CqLut16::tile_group_bytes(2) * at, norms + CqLut16::tile * at, count,
                                        half, codebook, x_rot + g0 * cq_group, stride, out);
      });
}

/// cqlut_exact_matmul with AVX2, FMA and F16C, one token alone on `matvec`. CQ2: runs of 8
/// tokens decoded and multiplied, then one of 4 and of 2 as needed (8 sums and a decoded column
/// fit the 16 registers; a decoded column serves every token of its run); CQ4, which needlec lays
/// as CqX8 instead, in plain C++.
NEEDLE_RT_AVX2 inline void cqlut_exact_matmul_with(CqLayoutMatvec matvec, const uint8_t *packed, const uint16_t *norms,
                                                   const float *codebook, int bits, int64_t rows, int64_t cols,
                                                   const float *x_rot, float *y, int64_t stride, int64_t n) {
  if (bits != 2)
    return cqlut_exact_matmul_portable(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
  const int64_t groups = cq_groups(cols);
  token_runs<8>(n, [&](auto tokens, int64_t j) {
    if constexpr (tokens == 1)
      matvec(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride);
    else
      cq2_exact_tokens_avx2<tokens>(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride, stride);
  });
}

/// cqlut_exact_matmul with AVX2, FMA and F16C: a token alone on the pair tables' byte planes.
NEEDLE_RT_AVX2 inline void cqlut_exact_matmul_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                   int bits, int64_t rows, int64_t cols, const float *x_rot, float *y,
                                                   int64_t stride, int64_t n) {
  cqlut_exact_matmul_with(cq2_exact_matvec_avx2, packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

// The exact mode's CQ2 with AVX-512 (F): a pair's 16 float entries fill one register, and one
// vpermps looks them up for 16 rows. Their own target attribute, as the AVX2 kernels': the object
// backend calls them only for a CPU with AVX-512F (and AVX2, FMA and F16C); C++ built for one
// reaches the CqLut16 ones through the #if in cqlut_exact_matmul (the CqLutDword one is the
// object's alone: the C++ backend lays CQ2 as CqLut16). The zero-masking intrinsics with a full mask
// (the same instructions) stand in for the plain ones, whose GCC 12 definitions start from an
// "undefined" register that -Wmaybe-uninitialized reports in every caller (GCC bug 105593).
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask32 kAll32 = 0xFFFFFFFFu;
constexpr __mmask64 kAll64 = ~0ull;

/// Lanes 8·kHalf..8·kHalf + 7 of v (kHalf 0 or 1; GCC 12's _mm512_castps512_ps256 has the
/// "undefined" register of bug 105593 too).
template <int kHalf> NEEDLE_RT_AVX512 inline __m256 avx512_half(__m512 v) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, _mm512_castps_pd(v), kHalf));
}

/// The lanes of a vector below `live` (0..16): avx2_first_lanes' mask for 16 lanes.
inline __mmask16 avx512_first_lanes(int64_t live) { return static_cast<__mmask16>((1u << live) - 1); }

/// A CQ2 group's pair tables as cq2_exact_tile_avx512 reads them: unit u's 16 float entries
/// c[k & 3]·x[2u] + c[k >> 2]·x[2u + 1] at 16u (cq2_pair_tables_avx512). 4 KB per group.
using Cq2PairTables = float[64 * 16];

/// A CQ2 codebook as cq2_pair_tables_avx512 takes it: entry k's c[k & 3] (first) and c[k >> 2]
/// (second), k = 0..15.
struct Cq2PairCodebook {
  __m512 first, second;
};
NEEDLE_RT_AVX512 inline Cq2PairCodebook cq2_pair_codebook_avx512(const float *c) {
  return {
      _mm512_setr_ps(c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3], c[0], c[1], c[2], c[3]),
      _mm512_setr_ps(c[0], c[0], c[0], c[0], c[1], c[1], c[1], c[1], c[2], c[2], c[2], c[2], c[3], c[3], c[3], c[3])};
}

/// A group's pair tables from its 128 inputs x, a unit's 16 entries in one vector: a product, a
/// product and a sum, the arithmetic of cqlut_entries_avx2 (half the vector operations of building
/// them 8 at a time).
NEEDLE_RT_AVX512 inline void cq2_pair_tables_avx512(const Cq2PairCodebook &c, const float *x, float *tables) {
  for (int u = 0; u < 64; ++u)
    _mm512_store_ps(tables + 16 * u, _mm512_add_ps(_mm512_mul_ps(c.first, _mm512_set1_ps(x[2 * u])),
                                                   _mm512_mul_ps(c.second, _mm512_set1_ps(x[2 * u + 1]))));
}

/// One token's sums of one CqLut16 tile (16 CQ2 rows) over a block of `count` groups, in float:
/// per 16 bytes of a chunk (16 rows' codes of two units, one per nibble), the bytes widened to 32
/// bits and each unit's 16 entries looked up for the 16 rows by one vpermps (it reads a lane's
/// low 4 bits: the high nibble takes a shift, neither a mask), then added; per group, the rows'
/// sums scaled by their norms. 2 lookups, a widening and a shift per 64 weights.
NEEDLE_RT_AVX512 inline void cq2_exact_tile_avx512(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                                   const Cq2PairTables *tables, float *out) {
  __m512 rows = _mm512_setzero_ps();
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(2)) {
    const float *t = tables[g];
    __m512 low = _mm512_setzero_ps(), high = _mm512_setzero_ps(); // two chains: the nibbles' units
    for (int q = 0; q < 16; ++q)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) { // bytes 16h..16h+15: units 4q + h (low nibbles), 4q + 2 + h (high)
        const __m512i codes = _mm512_maskz_cvtepu8_epi32(
            kAll16, _mm_loadu_si128(reinterpret_cast<const __m128i *>(tile + 32 * q + 16 * h)));
        low = _mm512_add_ps(low, _mm512_maskz_permutexvar_ps(kAll16, codes, _mm512_load_ps(t + 16 * (4 * q + h))));
        high = _mm512_add_ps(high, _mm512_maskz_permutexvar_ps(kAll16, _mm512_maskz_srli_epi32(kAll16, codes, 4),
                                                               _mm512_load_ps(t + 16 * (4 * q + 2 + h))));
      }
    const __m512 n =
        _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(norms + 16 * g)));
    rows = _mm512_fmadd_ps(_mm512_add_ps(low, high), n, rows);
  }
  _mm512_storeu_ps(out, rows);
}

/// cqlut_exact_matmul_avx512 for one CQ2 token (CqLut16): block by block, the pair tables of the
/// block's groups (16 KB), then every tile's sums over them (cq2_exact_tile_avx512).
NEEDLE_RT_AVX512 inline void cq2_exact_matvec_avx512(const uint8_t *packed, const uint16_t *norms,
                                                     const float *codebook, int64_t rows, int64_t groups,
                                                     const float *x_rot, float *y) {
  alignas(64) Cq2PairTables tables[CqLut16::block];
  const Cq2PairCodebook c = cq2_pair_codebook_avx512(codebook);
  cqlut_each_tile<1>(
      rows, groups, y, 0,
      [&](int64_t g0, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          cq2_pair_tables_avx512(c, x_rot + (g0 + i) * cq_group, tables[i]);
      },
      [&](int64_t at, int64_t, int64_t count, float(*out)[CqLut16::tile]) {
        cq2_exact_tile_avx512(packed + CqLut16::tile_group_bytes(2) * at, norms + CqLut16::tile * at, count, tables,
                              out[0]);
      });
}

/// Byte b of every lane of a 64-byte CqLutDword chunk brought to the lane's low byte, as vpermps
/// reads a lane's low 4 bits: a load b bytes on, or where kInside is false (a matrix's last group:
/// nothing past it may be read) a shift in the register. Pinned in a register: GCC 12 would
/// otherwise load the codes a second time for the shift that takes their high nibble, one more load
/// across a cache line per chunk.
template <bool kInside> NEEDLE_RT_AVX512 inline __m512i dword_codes_avx512(const uint8_t *chunk, int b) {
  __m512i codes =
      kInside ? _mm512_loadu_si512(chunk + b) : _mm512_maskz_srli_epi32(kAll16, _mm512_loadu_si512(chunk), 8 * b);
  asm("" : "+v"(codes));
  return codes;
}

/// cqlut_exact_matmul with AVX-512F (and AVX2, FMA, F16C): CQ2 as cqlut_exact_matmul_avx2's, a
/// token alone on cq2_exact_matvec_avx512; CQ4, which needlec lays as CqLutDword for
/// cq4_exact_dword_matmul_avx512 instead, in plain C++.
NEEDLE_RT_AVX512 inline void cqlut_exact_matmul_avx512(const uint8_t *packed, const uint16_t *norms,
                                                       const float *codebook, int bits, int64_t rows, int64_t cols,
                                                       const float *x_rot, float *y, int64_t stride, int64_t n) {
  cqlut_exact_matmul_with(cq2_exact_matvec_avx512, packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

/// One CqLutDword tile group's CQ4 sums (before their norms) for kTokens tokens, added into s
/// (x the group's inputs, token j's j·stride floats on): per 64-byte chunk, each of a row's 4
/// bytes brought to its lane's low byte by a load b bytes on (dword_codes_avx512), its low
/// nibble's codebook entries looked up for the 16 rows by one vpermps and its high nibble's after
/// a shift, each times its unit's input (broadcast: a table per unit would cost a load more), once
/// per token. 2 lookups and a shift per 32 weights however many tokens, where CqLut16 took a
/// widening more. kInside as dword_codes_avx512's.
template <bool kInside, int kTokens, int kChains>
NEEDLE_RT_AVX512 inline void cq4_dword_group_avx512(const uint8_t *group, __m512 codebook, const float *x,
                                                    int64_t stride, __m512 (&s)[kTokens][kChains]) {
  for (int m = 0; m < 16; ++m) {
    const uint8_t *chunk = group + 64 * m;
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) { // byte b of a lane: units 8m + b (low nibble) and 8m + 4 + b (high)
      const __m512i codes = dword_codes_avx512<kInside>(chunk, b);
      const __m512 low = _mm512_maskz_permutexvar_ps(kAll16, codes, codebook),
                   high = _mm512_maskz_permutexvar_ps(kAll16, _mm512_maskz_srli_epi32(kAll16, codes, 4), codebook);
#pragma GCC unroll 4
      for (int j = 0; j < kTokens; ++j) {
        const float *xj = x + j * stride + 8 * m + b;
        __m512 &a0 = s[j][(2 * b) % kChains], &a1 = s[j][(2 * b + 1) % kChains];
        a0 = _mm512_fmadd_ps(low, _mm512_set1_ps(xj[0]), a0);
        a1 = _mm512_fmadd_ps(high, _mm512_set1_ps(xj[4]), a1);
      }
    }
  }
}

/// kTokens tokens' sums of one CqLutDword tile (16 CQ4 rows) over a block of `count` groups (x at
/// the block): per group, cq4_dword_group_avx512's sums scaled by the rows' norms. A token's
/// chains: 8 alone (two FMA pipes of 4 cycles' latency), 4 in a run. `ends_matrix`: the block's
/// last group is the matrix's.
template <int kTokens>
NEEDLE_RT_AVX512 inline void cq4_exact_dword_tile_avx512(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                                         const float *codebook, const float *x, int64_t stride,
                                                         bool ends_matrix, float (*out)[CqLut16::tile]) {
  constexpr int kChains = kTokens == 1 ? 8 : 4;
  const __m512 c = _mm512_loadu_ps(codebook);
  __m512 rows[kTokens];
  for (int j = 0; j < kTokens; ++j)
    rows[j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(4), x += cq_group) {
    __m512 s[kTokens][kChains];
    for (int j = 0; j < kTokens; ++j)
      for (int k = 0; k < kChains; ++k)
        s[j][k] = _mm512_setzero_ps();
    if (ends_matrix && g == count - 1)
      cq4_dword_group_avx512<false>(tile, c, x, stride, s);
    else
      cq4_dword_group_avx512<true>(tile, c, x, stride, s);
    const __m512 n =
        _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(norms + 16 * g)));
    for (int j = 0; j < kTokens; ++j) {
      __m512 sum = _mm512_add_ps(_mm512_add_ps(s[j][0], s[j][1]), _mm512_add_ps(s[j][2], s[j][3]));
      if constexpr (kChains == 8)
        sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(s[j][4], s[j][5]), _mm512_add_ps(s[j][6], s[j][7])));
      rows[j] = _mm512_fmadd_ps(sum, n, rows[j]);
    }
  }
  for (int j = 0; j < kTokens; ++j)
    _mm512_storeu_ps(out[j], rows[j]);
}

/// kTokens tokens of cq4_exact_dword_matmul_avx512: every tile's sums over each block, its
/// weights read once for the tokens.
template <int kTokens>
NEEDLE_RT_AVX512 inline void cq4_exact_dword_tokens_avx512(const uint8_t *packed, const uint16_t *norms,
                                                           const float *codebook, int64_t rows, int64_t groups,
                                                           const float *x_rot, float *y, int64_t stride) {
  const int64_t end = CqLut16::tiles(rows) * groups; // in tile groups
  cqlut_each_tile<kTokens>(
      rows, groups, y, stride, [](int64_t, int64_t) {},
      [&](int64_t at, int64_t g0, int64_t count, float(*out)[CqLut16::tile]) {
        cq4_exact_dword_tile_avx512<kTokens>(packed + CqLut16::tile_group_bytes(4) * at, norms + CqLut16::tile * at,
                                             count, codebook, x_rot + g0 * cq_group, stride, at + count == end, out);
      });
}

/// The exact mode's needle.cq_matmul of a CQ4 matrix with AVX-512F on CqLutDword (the object
/// backend's, where the CPU has AVX-512F: cqlut_matmul's signature), in runs of up to 4 tokens on
/// the codebook.
NEEDLE_RT_AVX512 inline void cq4_exact_dword_matmul_avx512(const uint8_t *packed, const uint16_t *norms,
                                                           const float *codebook, int, int64_t rows, int64_t cols,
                                                           const float *x_rot, float *y, int64_t stride, int64_t n) {
  token_runs<4>(n, [&](auto tokens, int64_t j) {
    cq4_exact_dword_tokens_avx512<tokens>(packed, norms, codebook, rows, cq_groups(cols), x_rot + j * stride,
                                          y + j * stride, stride);
  });
}

/// The fixed point of a CQ group's tables (Cq2FixedTables, CqPlaneTables): each entry of CQ2's pair
/// tables c[k & 3]·x[2u] + c[k >> 2]·x[2u + 1] (cq2_pair_tables_avx512's float), or of CQ4's unit
/// tables c[k]·x[u], times 2^shift, rounded to an integer. For CQ2, bound = max|c| · max_u (|x[2u]|
/// + |x[2u + 1]|) (CQ4: max|c| · max_u |x[u]|) is at least every entry's magnitude (to rounding)
/// and at most twice the largest; shift puts it (with a margin for rounding) in [2^22, 2^23), so
/// every entry lies in (-2^23, 2^23): three bytes hold any entry (the byte planes'), a row's n
/// lookups per group (CQ2 64, CQ4 128) sum in int32 with room to spare (128 · 2^23 = 2^30), and
/// each entry is off by at most 2^-23 of bound: a group's sum strays by at most n · 2^-23 · bound,
/// as its float sum would by (n - 1) · 2^-24 · Σ|entries looked up|. Why integers: Zen 4 issues
/// vpermd with vpaddd faster than vpermps with vaddps (docs/performance-log.md). unscale is -shift
/// for vscalefps, or NaN where an input is infinite or NaN, or the inputs so large that their sum
/// or an entry overflows (as float entries could too): that group's rows come out NaN.
struct CqFixedPoint {
  __m512 shift; // in every lane, for vscalefps
  float unscale;
};

/// The fixed point of a group whose table entries are at most `bound` in magnitude (to rounding);
/// finite: no input is infinite or NaN, nor their sum.
NEEDLE_RT_AVX512 inline CqFixedPoint cq_fixed_point(float bound, bool finite) {
  // An entry may exceed bound by its roundings: past the float range, it would be no number.
  finite = finite && std::isfinite(bound * (1.0f + 0x1p-20f));
  // 2^-20 over bound (in double: bound may be near the float range's top) covers the roundings of
  // bound and of an entry's products and sum (4 in all, each 2^-24 at most of a normal float), and
  // 2^-147 theirs below the normal range (each 2^-150 at most): scaled, an entry stays below
  // 2^23 - 2, so it rounds into three bytes with no clamp.
  const int shift = bound > 0.0f && finite ? 22 - std::ilogb(static_cast<double>(bound) * (1 + 0x1p-20) + 0x1p-147) : 0;
  return {_mm512_set1_ps(static_cast<float>(shift)), finite ? static_cast<float>(-shift) : NAN};
}

/// The fixed point of the CQ2 group of inputs x (CqFixedPoint); largest_code is max|c|.
NEEDLE_RT_AVX512 inline CqFixedPoint cq2_fixed_point_avx512(float largest_code, const float *x) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odds = _mm512_add_epi32(evens, _mm512_set1_epi32(1));
  // |x[2u]| + |x[2u + 1]| lane by lane: the largest so far, and the sum, which (unlike vmaxps)
  // keeps a NaN or an infinity.
  __m512 widest = _mm512_setzero_ps(), total = _mm512_setzero_ps();
  for (int i = 0; i < cq_group; i += 32) {
    const __m512 lo = _mm512_loadu_ps(x + i), hi = _mm512_loadu_ps(x + i + 16);
    const __m512 even = _mm512_maskz_permutex2var_ps(kAll16, lo, evens, hi);
    const __m512 odd = _mm512_maskz_permutex2var_ps(kAll16, lo, odds, hi);
    const __m512 pair = _mm512_add_ps(_mm512_abs_ps(even), _mm512_abs_ps(odd));
    widest = _mm512_maskz_max_ps(kAll16, widest, pair);
    total = _mm512_add_ps(total, pair);
  }
  return cq_fixed_point(largest_code * avx2_lane_max(_mm256_max_ps(avx512_half<0>(widest), avx512_half<1>(widest))),
                        std::isfinite(avx2_lane_sum(_mm256_add_ps(avx512_half<0>(total), avx512_half<1>(total)))));
}

/// Unit u's 16 pair-table entries in the fixed point f (exact scaling: a power of 2).
NEEDLE_RT_AVX512 inline __m512i cq2_fixed_unit_avx512(const Cq2PairCodebook &c, const float *x, int u,
                                                      const CqFixedPoint &f) {
  const __m512 entries = _mm512_add_ps(_mm512_mul_ps(c.first, _mm512_set1_ps(x[2 * u])),
                                       _mm512_mul_ps(c.second, _mm512_set1_ps(x[2 * u + 1])));
  return _mm512_maskz_cvtps_epi32(kAll16, _mm512_maskz_scalef_ps(kAll16, entries, f.shift));
}

/// A CQ2 group's pair tables in fixed point (CqFixedPoint) as int32, unit u's 16 entries at 16u,
/// for cq2_fixed_chunk_tiles_avx512.
struct Cq2FixedTables {
  alignas(64) int32_t entries[64 * 16];
  float unscale;
};

/// The CQ2 group of inputs x's Cq2FixedTables; largest_code is max|c|.
NEEDLE_RT_AVX512 inline void cq2_fixed_tables_avx512(const Cq2PairCodebook &c, float largest_code, const float *x,
                                                     Cq2FixedTables &out) {
  const CqFixedPoint f = cq2_fixed_point_avx512(largest_code, x);
  out.unscale = f.unscale;
  for (int u = 0; u < 64; ++u)
    _mm512_store_si512(out.entries + 16 * u, cq2_fixed_unit_avx512(c, x, u, f));
}

/// One 64-byte chunk's 16 CQ2 row sums of its 8 units (in the tables' fixed point) on their tables
/// in registers: tables[b] unit 8m + b's, tables[4 + b] unit 8m + 4 + b's. Each of a row's 4 bytes
/// is brought to its lane's low byte by a load b bytes on, as vpermd reads a lane's low 4 bits: the
/// low nibbles' lookups need nothing more, the high ones' a shift (dword_codes_avx512). kInside as
/// dword_codes_avx512's.
template <bool kInside>
NEEDLE_RT_AVX512 inline __m512i cq2_fixed_chunk_avx512(const uint8_t *chunk, const __m512i *tables) {
  __m512i low = _mm512_setzero_si512(), high = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int b = 0; b < 4; ++b) {
    const __m512i codes = dword_codes_avx512<kInside>(chunk, b);
    low = _mm512_add_epi32(low, _mm512_maskz_permutexvar_epi32(kAll16, codes, tables[b]));
    high = _mm512_add_epi32(
        high, _mm512_maskz_permutexvar_epi32(kAll16, _mm512_maskz_srli_epi32(kAll16, codes, 4), tables[4 + b]));
  }
  return _mm512_add_epi32(low, high);
}

/// Asks for the codes kCodesAhead bytes on (prefetcht0), ahead of the hardware prefetchers: an
/// integer address, as it may lie past the matrix (a prefetch never faults).
constexpr uintptr_t kCodesAhead = 1536;
inline void prefetch_codes(const uint8_t *at) {
  _mm_prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(at) + kCodesAhead), _MM_HINT_T0);
}

/// The 16 row sums (before their norms, in t's fixed point) of `slab` tiles' CQ2 group on its pair
/// tables t, into sums[k] for tile k, from a CqLutChunkMajor group: chunk m of every tile at
/// `group` + m·chunk_run, tile after tile. Chunk by chunk, its 8 units' tables are loaded into
/// registers once for every tile: a tile at a time loaded 8 tables a chunk, and Zen 4's L1 gives
/// one 64-byte load a cycle, which held that kernel more than its lookups (docs/performance-log.md).
/// ends_matrix when the last tile's group is the matrix's last.
NEEDLE_RT_AVX512 inline void cq2_fixed_chunk_tiles_avx512(const uint8_t *group, int64_t chunk_run, int64_t slab,
                                                          const Cq2FixedTables &t, bool ends_matrix,
                                                          int32_t (*sums)[16]) {
  for (int m = 0; m < 8; ++m) {
    __m512i tables[8];
    for (int b = 0; b < 8; ++b)
      tables[b] = _mm512_load_si512(t.entries + 16 * (8 * m + b));
    const uint8_t *run = group + m * chunk_run;
    const bool last_run = ends_matrix && m == 7; // nothing past its last chunk may be read
    for (int64_t k = 0; k < slab; ++k) {
      const uint8_t *chunk = run + 64 * k;
      prefetch_codes(chunk);
      const __m512i s = last_run && k == slab - 1 ? cq2_fixed_chunk_avx512<false>(chunk, tables)
                                                  : cq2_fixed_chunk_avx512<true>(chunk, tables);
      _mm512_store_si512(sums[k], m == 0 ? s : _mm512_add_epi32(_mm512_load_si512(sums[k]), s));
    }
  }
}

/// One CQ2 token's y on CqLutChunkMajor, slab by slab (up to 1024 rows, 8 KB of sums and
/// outputs on the stack): group by group, its fixed-point tables (kBuildTables into Tables),
/// every tile's sums on them (kSumTiles, as cq2_fixed_chunk_tiles_avx512), back to float (exact
/// below 2^24; above, rounded as a float sum is) and scaled by the rows' norms. A matrix of more
/// than one slab builds its tables per slab.
template <typename Tables, auto kBuildTables, auto kSumTiles>
NEEDLE_RT_AVX512 inline void cq2_chunk_major_matvec(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                    int64_t rows, int64_t groups, const float *x_rot, float *y) {
  alignas(64) Tables tables;
  alignas(64) int32_t sums[CqLutChunkMajor::slab_tiles][CqLut16::tile];
  alignas(64) float out[CqLutChunkMajor::slab_tiles][CqLut16::tile];
  const Cq2PairCodebook c = cq2_pair_codebook_avx512(codebook);
  const float largest_code = std::fmax(std::fmax(std::fabs(codebook[0]), std::fabs(codebook[1])),
                                       std::fmax(std::fabs(codebook[2]), std::fabs(codebook[3])));
  const int64_t tiles = CqLut16::tiles(rows);
  for (int64_t t0 = 0; t0 < tiles; t0 += CqLutChunkMajor::slab_tiles) {
    const int64_t slab = CqLutChunkMajor::slab_size(tiles, t0);
    for (int64_t g = 0; g < groups; ++g) {
      kBuildTables(c, largest_code, x_rot + g * cq_group, tables);
      kSumTiles(packed + CqLutChunkMajor::chunk(tiles, groups, t0, g, 0, 2), 64 * slab, slab, tables,
                g == groups - 1 && t0 + slab == tiles, sums);
      const __m512 unscale = _mm512_set1_ps(tables.unscale);
      const uint16_t *group_norms = norms + CqLutChunkMajor::norms(tiles, groups, t0, g);
      for (int64_t k = 0; k < slab; ++k) {
        const __m512 n = _mm512_maskz_cvtph_ps(
            kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(group_norms + CqLut16::tile * k)));
        const __m512 sum =
            _mm512_maskz_scalef_ps(kAll16, _mm512_maskz_cvtepi32_ps(kAll16, _mm512_load_si512(sums[k])), unscale);
        _mm512_store_ps(out[k], g == 0 ? _mm512_mul_ps(sum, n) : _mm512_fmadd_ps(sum, n, _mm512_load_ps(out[k])));
      }
    }
    for (int64_t k = 0; k < slab; ++k)
      cqlut_tile_to_y<1>(&out[k], t0 + k, rows, true, y, 0);
  }
}

/// The exact mode's needle.cq_matmul of a CQ2 matrix with AVX-512F on CqLutChunkMajor (the object
/// backend's, where the CPU has AVX-512F but not VBMI and VNNI: cqlut_matmul's signature), token
/// by token on int32 pair tables.
NEEDLE_RT_AVX512 inline void cq2_exact_chunk_matmul_avx512(const uint8_t *packed, const uint16_t *norms,
                                                           const float *codebook, int, int64_t rows, int64_t cols,
                                                           const float *x_rot, float *y, int64_t stride, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    cq2_chunk_major_matvec<Cq2FixedTables, cq2_fixed_tables_avx512, cq2_fixed_chunk_tiles_avx512>(
        packed, norms, codebook, rows, cq_groups(cols), x_rot + j * stride, y + j * stride);
}

/// One CQ4 row's Σ over a block of `count` groups (CqX8) with AVX-512F, as 8 partial sums: per 16
/// bytes, the bytes widened to 32 bits and each nibble's 16 columns looked up by one vpermps of
/// the codebook scaled by the group's norm, times the inputs in lane order (xp: Cq4RowsAvx512).
NEEDLE_RT_AVX512 inline __m256 cqx8_row_block_avx512(const uint8_t *row, const uint16_t *norms, int64_t count,
                                                     __m512 codebook, const float *xp) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t g = 0; g < count; ++g, row += CqX8::group_bytes, xp += cq_group) {
    const __m512 c = _mm512_mul_ps(codebook, _mm512_set1_ps(_cvtsh_ss(norms[g])));
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) { // bytes 16b..16b+15: vector b / 2, bytes of l < 4 (b even) or l >= 4
      const __m512i codes =
          _mm512_maskz_cvtepu8_epi32(kAll16, _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 16 * b)));
      const float *x = xp + 64 * (b / 2) + 16 * (b % 2); // nibble h's columns 32 floats on
      acc[b] = _mm512_fmadd_ps(_mm512_maskz_permutexvar_ps(kAll16, codes, c), _mm512_load_ps(x), acc[b]);
      acc[b] = _mm512_fmadd_ps(_mm512_maskz_permutexvar_ps(kAll16, _mm512_maskz_srli_epi32(kAll16, codes, 4), c),
                               _mm512_load_ps(x + 32), acc[b]);
    }
  }
  const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
  return _mm256_add_ps(avx512_half<0>(sum), avx512_half<1>(sum));
}

/// The AVX-512 row kernel of cqx8_matvec_on. A CQ4 byte's lane (16 bytes widened) holds the
/// columns 8k + 4·(b % 2) + (0..3) of its 32 (CqX8::cq4_byte), so at each block the inputs are
/// laid in that order once for all the rows: xp[32·(2v + h) + 16c + i] = x[64v + 32h + 8·(i / 4)
/// + 4c + i % 4], two 128-bit lane shuffles per 32.
struct Cq4RowsAvx512 {
  __m512 codebook;
  alignas(64) float xp[CqX8::block * cq_group];
  NEEDLE_RT_AVX512 void at_block(const float *x, int64_t count) {
    for (int64_t i = 0; i < count * cq_group; i += 32) {
      const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
      _mm512_store_ps(xp + i, _mm512_maskz_shuffle_f32x4(kAll16, a, b, 0x88));      // 128-bit lanes a0 a2 b0 b2
      _mm512_store_ps(xp + i + 16, _mm512_maskz_shuffle_f32x4(kAll16, a, b, 0xDD)); // a1 a3 b1 b3
    }
  }
  NEEDLE_RT_AVX512 void rows8(const uint8_t *row, const uint16_t *norms, int64_t count, float *y) const {
    __m256 sums[8];
#pragma GCC unroll 8
    for (int64_t i = 0; i < 8; ++i)
      sums[i] = cqx8_row_block_avx512(row + CqX8::group_bytes * count * i, norms + count * i, count, codebook, xp);
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), avx2_lane_sums8(sums)));
  }
  NEEDLE_RT_AVX512 float row(const uint8_t *row, const uint16_t *norms, int64_t count) const {
    return avx2_lane_sum(cqx8_row_block_avx512(row, norms, count, codebook, xp));
  }
};

/// cqx8_matmul_avx512 for one token.
NEEDLE_RT_AVX512 inline void cqx8_matvec_avx512(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                int64_t rows, int64_t groups, const float *x_rot, float *y) {
  Cq4RowsAvx512 kernel;
  kernel.codebook = _mm512_loadu_ps(codebook);
  cqx8_matvec_on(kernel, packed, norms, rows, groups, x_rot, y);
}

/// cqx8_matmul with AVX-512F (and AVX2, FMA, F16C): a token alone on cqx8_matvec_avx512, batches
/// as cqx8_matmul_avx2's.
NEEDLE_RT_AVX512 inline void cqx8_matmul_avx512(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                int /*bits*/, int64_t rows, int64_t cols, const float *x_rot, float *y,
                                                int64_t stride, int64_t n) {
  cqx8_matmul_with(cqx8_matvec_avx512, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
}

// The fast mode with AVX-512 VBMI and VNNI, on the CqLutDword layout: vpermb looks up each byte
// in its own unit's table, and vpdpbusd adds a row's 4 entries into its 32-bit lane. The object
// backend lays the weights so and calls cqlut_matmul_avx512vnni for a CPU with both (Ice Lake,
// Sapphire Rapids, Zen 4); the C++ backend lays CqLut16 for every build, so it keeps the AVX2
// kernel.

/// The fast mode's kernels with AVX-512 VBMI and VNNI (cqlut_matmul_on) on CqLutDword, whose
/// units are CqLut16's, so their tables are too.
struct CqLutAvx512Vnni : CqLutAvx2Tables {
  /// CqLutPortable::tile's sums on CqLutDword. Per 64-byte chunk (16 rows x 8 units), each byte's
  /// low nibble with its place in the lane above it (4 units' tables, 64 entries) indexes one
  /// vpermb, the high nibble another; vpdpbusd by ones adds each row's 4 entries into its 32-bit
  /// sum. 7 instructions per 64 bytes of codes (128 units: 256 CQ2 weights, 128 CQ4 ones), against
  /// CqLutAvx2's 22. A token's sums go in 4 chains
  /// (2 in a run: the tokens are chains enough) to hide vpdpbusd's latency; per group, they
  /// become floats scaled by the group's scale and norms.
  template <int kBits, int kTokens>
  NEEDLE_RT_AVX512_VNNI static void tile(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                         const CqLutBlockTables<kBits> *tables, const CqLutBlockScales *scale,
                                         float (*out)[CqLut16::tile]) {
    constexpr int kChunks = 4 * kBits, kChains = kTokens == 1 ? 4 : 2;
    const __m512i nibble = _mm512_set1_epi8(15), ones = _mm512_set1_epi8(1);
    const __m512i units = _mm512_set1_epi32(0x30201000); // byte b of a lane reads entries 16b..16b+15
    __m512 sums[kTokens];
    for (int j = 0; j < kTokens; ++j)
      sums[j] = _mm512_setzero_ps();
    for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(kBits)) {
      __m512i acc[kTokens][kChains];
      for (int j = 0; j < kTokens; ++j)
        for (int k = 0; k < kChains; ++k)
          acc[j][k] = _mm512_setzero_si512();
#pragma GCC unroll 16
      for (int m = 0; m < kChunks; ++m) {
        prefetch_codes(tile + 64 * m);
        const __m512i codes = _mm512_loadu_si512(tile + 64 * m);
        const __m512i low = _mm512_ternarylogic_epi32(codes, nibble, units, 0xEA), // (codes & 15) | units
            high = _mm512_ternarylogic_epi32(_mm512_maskz_srli_epi16(kAll32, codes, 4), nibble, units, 0xEA);
#pragma GCC unroll 8
        for (int j = 0; j < kTokens; ++j) {
          const int8_t *t = tables[j][g] + 128 * m; // units 8m..8m+3, then 8m+4..8m+7
          __m512i &a0 = acc[j][(2 * m) % kChains], &a1 = acc[j][(2 * m + 1) % kChains];
          a0 = _mm512_dpbusd_epi32(a0, ones, _mm512_maskz_permutexvar_epi8(kAll64, low, _mm512_loadu_si512(t)));
          a1 = _mm512_dpbusd_epi32(a1, ones, _mm512_maskz_permutexvar_epi8(kAll64, high, _mm512_loadu_si512(t + 64)));
        }
      }
      const __m512 n =
          _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(norms + 16 * g)));
      for (int j = 0; j < kTokens; ++j) {
        __m512i total = acc[j][0];
        for (int k = 1; k < kChains; ++k)
          total = _mm512_add_epi32(total, acc[j][k]);
        sums[j] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(kAll16, total),
                                  _mm512_mul_ps(n, _mm512_set1_ps(scale[j][g])), sums[j]);
      }
    }
    for (int j = 0; j < kTokens; ++j)
      _mm512_storeu_ps(out[j], sums[j]);
  }
};

/// cqlut_matmul with AVX-512 VBMI and VNNI (bits 2 or 4), on a matrix in the CqLutDword layout.
NEEDLE_RT_AVX512_VNNI inline void cqlut_matmul_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                          const float *codebook, int bits, int64_t rows, int64_t cols,
                                                          const float *x_rot, float *y, int64_t stride, int64_t n) {
  cqlut_matmul_on<CqLutAvx512Vnni>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

/// A CQ group's unit tables in fixed point (CqFixedPoint; CQ2's units are pairs) cut into byte
/// planes for vpermb: planes[s][p] holds byte p of the entries of units 4s..4s+3 (p = 0 the
/// lowest, 2 the highest and signed: an entry lies in (-2^23, 2^23)), unit 4s + b's 16 at bytes
/// 16b..16b+15, the 64-entry table that a CqLutDword index byte (its code | 16b) looks up in.
/// Chunk m's low nibbles read set 2m, its high ones set 2m + 1.
template <int kBits> struct CqPlaneTables {
  alignas(64) uint8_t planes[8 * kBits][3][64];
  float unscale;
};

/// Units 4s..4s+3's fixed-point tables (unit[b] unit 4s + b's 16 entries) as set s's 3 byte planes
/// (CqPlaneTables): per plane, byte p of every int32 entry by two 2-source byte permutes and a blend.
NEEDLE_RT_AVX512_VNNI inline void cq_store_byte_planes_avx512vnni(const __m512i (&unit)[4], uint8_t (*planes)[64]) {
  // Byte j (and j + 32) of the index: byte 4j of two units' 32 entries, plus p.
  const __m512i first_bytes =
      _mm512_setr_epi32(0x0C080400, 0x1C181410, 0x2C282420, 0x3C383430, 0x4C484440, 0x5C585450, 0x6C686460, 0x7C787470,
                        0x0C080400, 0x1C181410, 0x2C282420, 0x3C383430, 0x4C484440, 0x5C585450, 0x6C686460, 0x7C787470);
  for (int p = 0; p < 3; ++p) {
    const __m512i pick = _mm512_add_epi8(first_bytes, _mm512_set1_epi8(static_cast<char>(p)));
    const __m512i low = _mm512_maskz_permutex2var_epi8(kAll64, unit[0], pick, unit[1]);
    const __m512i high = _mm512_maskz_permutex2var_epi8(kAll64, unit[2], pick, unit[3]);
    _mm512_store_si512(planes[p], _mm512_mask_blend_epi8(0xFFFFFFFF00000000ull, low, high));
  }
}

/// The CQ2 group of inputs x's CqPlaneTables; largest_code is max|c|.
NEEDLE_RT_AVX512_VNNI inline void cq2_plane_tables_avx512vnni(const Cq2PairCodebook &c, float largest_code,
                                                              const float *x, CqPlaneTables<2> &out) {
  const CqFixedPoint f = cq2_fixed_point_avx512(largest_code, x);
  out.unscale = f.unscale;
  for (int s = 0; s < 16; ++s) {
    __m512i unit[4];
    for (int b = 0; b < 4; ++b)
      unit[b] = cq2_fixed_unit_avx512(c, x, 4 * s + b, f);
    cq_store_byte_planes_avx512vnni(unit, out.planes[s]);
  }
}

/// acc plus a row's 8 entries of one byte plane of a CqLutDword chunk (4 units a nibble): the low
/// nibbles' indices looked up in low_table, the high ones' in high_table, each row's 4 bytes of
/// each added into its lane by vpdpbusd, as signed bytes for the highest plane.
NEEDLE_RT_AVX512_VNNI inline __m512i cq_plane_lookups_avx512vnni(bool high_plane, __m512i low, __m512i high,
                                                                 __m512i low_table, __m512i high_table, __m512i acc) {
  const __m512i ones = _mm512_set1_epi8(1);
  const __m512i a = _mm512_maskz_permutexvar_epi8(kAll64, low, low_table),
                b = _mm512_maskz_permutexvar_epi8(kAll64, high, high_table);
  return high_plane ? _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, ones, a), ones, b)
                    : _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, a, ones), b, ones);
}

/// One chunk of every tile of a slab added into the tiles' byte-plane sums (planes[k][p], tile k's
/// of plane p; kFirst: the group's first chunk, so the sums start at 0), tile k's chunk at run +
/// 64k, for cq2_plane_chunk_tiles_avx512vnni: the chunk's 6 planes (sets[0] its low nibbles',
/// sets[1] its high nibbles') in registers for every tile.
template <bool kFirst>
NEEDLE_RT_AVX512_VNNI inline void cq2_plane_chunk_avx512vnni(const uint8_t *run, int64_t slab,
                                                             const uint8_t (*sets)[3][64], int32_t (*planes)[3][16]) {
  const __m512i nibble = _mm512_set1_epi8(15);
  const __m512i units = _mm512_set1_epi32(0x30201000); // byte b of a lane reads entries 16b..16b+15
  __m512i low_tables[3], high_tables[3];
#pragma GCC unroll 3
  for (int p = 0; p < 3; ++p) {
    low_tables[p] = _mm512_load_si512(sets[0][p]);
    high_tables[p] = _mm512_load_si512(sets[1][p]);
  }
  for (int64_t k = 0; k < slab; ++k) {
    const uint8_t *chunk = run + 64 * k;
    prefetch_codes(chunk);
    const __m512i codes = _mm512_loadu_si512(chunk);
    const __m512i low = _mm512_ternarylogic_epi32(codes, nibble, units, 0xEA), // (codes & 15) | units
        high = _mm512_ternarylogic_epi32(_mm512_maskz_srli_epi16(kAll32, codes, 4), nibble, units, 0xEA);
#pragma GCC unroll 3
    for (int p = 0; p < 3; ++p) {
      const __m512i acc = kFirst ? _mm512_setzero_si512() : _mm512_load_si512(planes[k][p]);
      _mm512_store_si512(planes[k][p],
                         cq_plane_lookups_avx512vnni(p == 2, low, high, low_tables[p], high_tables[p], acc));
    }
  }
}

/// cq2_fixed_chunk_tiles_avx512's sums on CqPlaneTables, the same integers: chunk by chunk
/// (cq2_plane_chunk_avx512vnni), its 6 planes in registers for every tile; per tile, each byte's
/// low nibble with its place in the lane above it indexes one vpermb per plane, the high nibble
/// another, and vpdpbusd adds a row's 4 bytes of a plane into its 32-bit lane (the high plane
/// signed). Per 64-byte chunk 15 vector operations, where vpermd and vpaddd took 22, all on the two
/// ports of Intel's zmm units (docs/performance-log.md). The planes' sums are joined per group;
/// ends_matrix is unused: a chunk is read by one load.
NEEDLE_RT_AVX512_VNNI inline void cq2_plane_chunk_tiles_avx512vnni(const uint8_t *group, int64_t chunk_run,
                                                                   int64_t slab, const CqPlaneTables<2> &t, bool,
                                                                   int32_t (*sums)[16]) {
  alignas(64) int32_t planes[CqLutChunkMajor::slab_tiles][3][16];
  cq2_plane_chunk_avx512vnni<true>(group, slab, t.planes, planes);
  for (int m = 1; m < 8; ++m)
    cq2_plane_chunk_avx512vnni<false>(group + m * chunk_run, slab, t.planes + 2 * m, planes);
  for (int64_t k = 0; k < slab; ++k) {
    const __m512i mid = _mm512_maskz_slli_epi32(kAll16, _mm512_load_si512(planes[k][1]), 8),
                  high = _mm512_maskz_slli_epi32(kAll16, _mm512_load_si512(planes[k][2]), 16);
    _mm512_store_si512(sums[k], _mm512_add_epi32(_mm512_load_si512(planes[k][0]), _mm512_add_epi32(mid, high)));
  }
}

/// The exact mode's needle.cq_matmul of a CQ2 matrix with AVX-512 VBMI and VNNI on
/// CqLutChunkMajor (the object backend's, where the CPU has them: cqlut_matmul's signature), token
/// by token on byte planes of the pair tables: cq2_exact_chunk_matmul_avx512's floats, bit for bit.
NEEDLE_RT_AVX512_VNNI inline void cq2_exact_chunk_matmul_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                                    const float *codebook, int, int64_t rows,
                                                                    int64_t cols, const float *x_rot, float *y,
                                                                    int64_t stride, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    cq2_chunk_major_matvec<CqPlaneTables<2>, cq2_plane_tables_avx512vnni, cq2_plane_chunk_tiles_avx512vnni>(
        packed, norms, codebook, rows, cq_groups(cols), x_rot + j * stride, y + j * stride);
}

/// The fixed point of the CQ4 group of inputs x (CqFixedPoint); largest_code is max|c|.
NEEDLE_RT_AVX512 inline CqFixedPoint cq4_fixed_point_avx512(float largest_code, const float *x) {
  __m512 widest = _mm512_setzero_ps(), total = _mm512_setzero_ps(); // total keeps a NaN or an infinity
  for (int i = 0; i < cq_group; i += 16) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
    widest = _mm512_maskz_max_ps(kAll16, widest, a);
    total = _mm512_add_ps(total, a);
  }
  return cq_fixed_point(largest_code * avx2_lane_max(_mm256_max_ps(avx512_half<0>(widest), avx512_half<1>(widest))),
                        std::isfinite(avx2_lane_sum(_mm256_add_ps(avx512_half<0>(total), avx512_half<1>(total)))));
}

/// The CQ4 group of inputs x's CqPlaneTables, unit u's entries c[k]·x[u]; largest_code is max|c|.
NEEDLE_RT_AVX512_VNNI inline void cq4_plane_tables_avx512vnni(const float *codebook, float largest_code, const float *x,
                                                              CqPlaneTables<4> &out) {
  const CqFixedPoint f = cq4_fixed_point_avx512(largest_code, x);
  const __m512 c = _mm512_loadu_ps(codebook);
  out.unscale = f.unscale;
  for (int s = 0; s < 32; ++s) {
    __m512i unit[4];
    for (int b = 0; b < 4; ++b)
      unit[b] = _mm512_maskz_cvtps_epi32(
          kAll16, _mm512_maskz_scalef_ps(kAll16, _mm512_mul_ps(c, _mm512_set1_ps(x[4 * s + b])), f.shift));
    cq_store_byte_planes_avx512vnni(unit, out.planes[s]);
  }
}

/// One token's sums of one CqLutDword tile (16 CQ4 rows) over a block of `count` groups on their
/// byte-plane tables: per group, chunk by chunk, vpermb lookups of each plane and vpdpbusd adds as
/// cq2_plane_chunk_avx512vnni's (the tables read from L1: a tile's 16 chunks a group need 96), in
/// two sets of sums, even and odd chunks, whose chains of vpdpbusd then overlap; the planes joined
/// into the group's int32 sums, back to float and scaled by the rows' norms. 15 vector operations
/// per 64-byte chunk, where cq4_dword_group_avx512's vpermps and FMAs took 20.
NEEDLE_RT_AVX512_VNNI inline void cq4_plane_tile_avx512vnni(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                                            const CqPlaneTables<4> *tables, float *out) {
  const __m512i nibble = _mm512_set1_epi8(15);
  const __m512i units = _mm512_set1_epi32(0x30201000); // byte b of a lane reads entries 16b..16b+15
  __m512 rows = _mm512_setzero_ps();
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(4)) {
    __m512i acc[2][3];
    for (auto &set : acc)
      for (__m512i &a : set)
        a = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int m = 0; m < 16; ++m) {
      prefetch_codes(tile + 64 * m);
      const __m512i codes = _mm512_loadu_si512(tile + 64 * m);
      const __m512i low = _mm512_ternarylogic_epi32(codes, nibble, units, 0xEA), // (codes & 15) | units
          high = _mm512_ternarylogic_epi32(_mm512_maskz_srli_epi16(kAll32, codes, 4), nibble, units, 0xEA);
#pragma GCC unroll 3
      for (int p = 0; p < 3; ++p)
        acc[m % 2][p] = cq_plane_lookups_avx512vnni(p == 2, low, high, _mm512_load_si512(tables[g].planes[2 * m][p]),
                                                    _mm512_load_si512(tables[g].planes[2 * m + 1][p]), acc[m % 2][p]);
    }
    const __m512i mid = _mm512_maskz_slli_epi32(kAll16, _mm512_add_epi32(acc[0][1], acc[1][1]), 8),
                  high = _mm512_maskz_slli_epi32(kAll16, _mm512_add_epi32(acc[0][2], acc[1][2]), 16);
    const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(acc[0][0], acc[1][0]), _mm512_add_epi32(mid, high));
    const __m512 n =
        _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(norms + 16 * g)));
    rows = _mm512_fmadd_ps(
        _mm512_maskz_scalef_ps(kAll16, _mm512_maskz_cvtepi32_ps(kAll16, sum), _mm512_set1_ps(tables[g].unscale)), n,
        rows);
  }
  _mm512_storeu_ps(out, rows);
}

/// One CQ4 token's y on CqLutDword: block by block, its groups' byte-plane tables (24 KB), then
/// every tile's sums over them (cq4_plane_tile_avx512vnni).
NEEDLE_RT_AVX512_VNNI inline void cq4_plane_matvec_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                              const float *codebook, int64_t rows, int64_t groups,
                                                              const float *x_rot, float *y) {
  alignas(64) CqPlaneTables<4> tables[CqLut16::block];
  float largest_code = 0.0f;
  for (int k = 0; k < 16; ++k)
    largest_code = std::fmax(largest_code, std::fabs(codebook[k]));
  cqlut_each_tile<1>(
      rows, groups, y, 0,
      [&](int64_t g0, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          cq4_plane_tables_avx512vnni(codebook, largest_code, x_rot + (g0 + i) * cq_group, tables[i]);
      },
      [&](int64_t at, int64_t, int64_t count, float(*out)[CqLut16::tile]) {
        cq4_plane_tile_avx512vnni(packed + CqLut16::tile_group_bytes(4) * at, norms + CqLut16::tile * at, count, tables,
                                  out[0]);
      });
}

/// Every token of a CQ4 matrix on CqLutDword on byte planes (cq4_plane_matvec_avx512vnni), in
/// cqlut_matmul's signature: what cq4_exact_dword_matmul_avx512vnni does with a token alone on a
/// matrix of kCq4PlaneTiles tiles or more, for any shape (the tests').
NEEDLE_RT_AVX512_VNNI inline void cq4_plane_matmul_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                              const float *codebook, int, int64_t rows, int64_t cols,
                                                              const float *x_rot, float *y, int64_t stride, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    cq4_plane_matvec_avx512vnni(packed, norms, codebook, rows, cq_groups(cols), x_rot + j * stride, y + j * stride);
}

/// The fewest tiles of a CQ4 matrix whose token alone takes the byte planes. Their tables cost
/// about a thousand cycles a group, which the planes' 15 operations a chunk, against the FMA
/// kernel's 20, repay only over many tiles; the threshold is measured (BM_RuntimeCq4Planes,
/// docs/performance.md) and was measured on one machine only.
constexpr int64_t kCq4PlaneTiles = 64;

/// The exact mode's needle.cq_matmul of a CQ4 matrix with AVX-512 VBMI and VNNI on CqLutDword (the
/// object backend's, where the CPU has them: cqlut_matmul's signature): a token alone on a matrix
/// of kCq4PlaneTiles tiles or more on byte planes of the codebook's tables in fixed point
/// (cq4_plane_matvec_avx512vnni); other matrices, and runs of tokens, on
/// cq4_exact_dword_matmul_avx512, which reads the weights once per 4 tokens.
NEEDLE_RT_AVX512_VNNI inline void cq4_exact_dword_matmul_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                                    const float *codebook, int bits, int64_t rows,
                                                                    int64_t cols, const float *x_rot, float *y,
                                                                    int64_t stride, int64_t n) {
  if (n == 1 && CqLut16::tiles(rows) >= kCq4PlaneTiles)
    cq4_plane_matvec_avx512vnni(packed, norms, codebook, rows, cq_groups(cols), x_rot, y);
  else
    cq4_exact_dword_matmul_avx512(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

/// fwht's butterflies between lanes kHalf (1, 2 or 4) apart inside each 8-float vector: the lower
/// lane of each pair takes a + b, the upper a − b, from the pair's lanes swapped into t.
template <int kHalf> NEEDLE_RT_AVX2 inline __m256 avx2_butterflies(__m256 x) {
  const __m256 t = kHalf == 1   ? _mm256_permute_ps(x, 0xB1) // 1 0 3 2
                   : kHalf == 2 ? _mm256_permute_ps(x, 0x4E) // 2 3 0 1
                                : _mm256_permute2f128_ps(x, x, 1);
  constexpr int upper = kHalf == 1 ? 0xAA : kHalf == 2 ? 0xCC : 0xF0;
  return _mm256_blend_ps(_mm256_add_ps(x, t), _mm256_sub_ps(t, x), upper);
}

/// fwht with AVX2 for n a multiple of 8: the same butterflies in the same stage order and one
/// scale, so bit-identical to it (and to cq::fwht). The stages within a vector first, then those
/// between vectors, each a pass over x (a group of 128 stays in L1).
NEEDLE_RT_AVX2 inline void fwht_avx2(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(x + i, avx2_butterflies<4>(avx2_butterflies<2>(avx2_butterflies<1>(_mm256_loadu_ps(x + i)))));
  for (int64_t half = 8; half < n; half *= 2)
    for (int64_t block = 0; block < n; block += 2 * half)
      for (int64_t i = block; i < block + half; i += 8) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + half);
        _mm256_storeu_ps(x + i, _mm256_add_ps(a, b));
        _mm256_storeu_ps(x + i + half, _mm256_sub_ps(a, b));
      }
  const __m256 s = _mm256_set1_ps(static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))));
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
}

/// hadamard with AVX2 (fwht_avx2 where the group fills whole vectors, else hadamard_portable).
NEEDLE_RT_AVX2 inline void hadamard_avx2(const float *in, int64_t n, int64_t group, float *out) {
  if (group % 8 != 0)
    return hadamard_portable(in, n, group, out);
  const int64_t padded = hadamard_pad(in, n, group, out);
  for (int64_t g = 0; g < padded; g += group)
    fwht_avx2(out + g, group);
}

/// avx2_butterflies with AVX-512F, 16 lanes: kHalf 1, 2, 4 or 8.
template <int kHalf> NEEDLE_RT_AVX512 inline __m512 avx512_butterflies(__m512 x) {
  const __m512 t = kHalf == 1   ? _mm512_maskz_permute_ps(kAll16, x, 0xB1)        // 1 0 3 2 in each 4 lanes
                   : kHalf == 2 ? _mm512_maskz_permute_ps(kAll16, x, 0x4E)        // 2 3 0 1
                   : kHalf == 4 ? _mm512_maskz_shuffle_f32x4(kAll16, x, x, 0xB1)  // 4-lane blocks 1 0 3 2
                                : _mm512_maskz_shuffle_f32x4(kAll16, x, x, 0x4E); // 2 3 0 1
  constexpr __mmask16 upper = kHalf == 1 ? 0xAAAA : kHalf == 2 ? 0xCCCC : kHalf == 4 ? 0xF0F0 : 0xFF00;
  return _mm512_mask_sub_ps(_mm512_add_ps(x, t), upper, t, x);
}

/// fwht of one group of 128 (the CQ group) from in into out (which may equal in) with AVX-512F,
/// held in 8 registers: the stages within a vector, then between vectors, in fwht's order, then
/// the scale, so bit-identical to it.
NEEDLE_RT_AVX512 inline void fwht128_avx512(const float *in, float *out) {
  __m512 v[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)
    v[i] = avx512_butterflies<8>(
        avx512_butterflies<4>(avx512_butterflies<2>(avx512_butterflies<1>(_mm512_loadu_ps(in + 16 * i)))));
#pragma GCC unroll 3
  for (int half = 1; half < 8; half *= 2)
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      if ((i & half) == 0) {
        const __m512 a = v[i], b = v[i + half];
        v[i] = _mm512_add_ps(a, b);
        v[i + half] = _mm512_sub_ps(a, b);
      }
  const __m512 scale = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(static_cast<double>(cq_group))));
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)
    _mm512_storeu_ps(out + 16 * i, _mm512_mul_ps(v[i], scale));
}

/// hadamard with AVX-512F for groups of 128 (else hadamard_avx2): whole groups read from `in` as
/// they are, the last, partial one padded in out first.
NEEDLE_RT_AVX512 inline void hadamard_avx512(const float *in, int64_t n, int64_t group, float *out) {
  if (group != cq_group)
    return hadamard_avx2(in, n, group, out);
  const int64_t whole = n / group * group;
  for (int64_t g = 0; g < whole; g += group)
    fwht128_avx512(in + g, out + g);
  if (whole < n) {
    hadamard_pad(in + whole, n - whole, group, out + whole);
    fwht128_avx512(out + whole, out + whole);
  }
}
#endif

/// needle.hadamard: out [round_up(n, group)] = `in` padded with zeros, then H per group (group a
/// power of two), bit-identical to cq::fwht on each. out may equal in when that buffer holds the
/// padded length.
inline void hadamard(const float *in, int64_t n, int64_t group, float *out) {
#if NEEDLE_RT_TARGETS_AVX512
  hadamard_avx512(in, n, group, out);
#elif NEEDLE_RT_TARGETS_AVX2
  hadamard_avx2(in, n, group, out);
#else
  hadamard_portable(in, n, group, out);
#endif
}

/// needle.cq_matmul for n tokens on a CQ4 matrix in the CqX8 layout (the exact mode).
inline void cqx8_matmul(const uint8_t *packed, const uint16_t *norms, const float *codebook, [[maybe_unused]] int bits,
                        int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
#if NEEDLE_RT_TARGETS_AVX512
  cqx8_matmul_avx512(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_TARGETS_AVX2
  cqx8_matmul_avx2(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#else
  cq_matmul_in(CqX8{}, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
#endif
}

/// The exact mode's needle.cq_matmul for n tokens on a CQ2 or CQ4 matrix in the CqLut16 layout
/// (needlec lays only CQ2 so): AVX-512 or AVX2 where the compiler targets it, else
/// cqlut_exact_matmul_portable.
inline void cqlut_exact_matmul(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                               int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
#if NEEDLE_RT_TARGETS_AVX512
  cqlut_exact_matmul_avx512(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_TARGETS_AVX2
  cqlut_exact_matmul_avx2(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#else
  cqlut_exact_matmul_portable(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#endif
}

/// The fast mode's needle.cq_matmul for n tokens on a CQ2 or CQ4 matrix in the CqLut16 layout:
/// AVX2 or simd128 where the compiler targets it, NEON on aarch64, else cqlut_matmul_portable.
inline void cqlut_matmul(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits, int64_t rows,
                         int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
#if NEEDLE_RT_TARGETS_AVX2
  cqlut_matmul_avx2(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_NEON_KERNELS
  cqlut_matmul_on<CqLutNeon>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_TARGETS_SIMD128
  cqlut_matmul_simd128(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#else
  cqlut_matmul_portable(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#endif
}

/// needle.cq_gather: row `row` of a CQ matrix in the rotated domain, out[g·128 + i] =
/// c[idx[row,g,i]] · n16[row,g], [cq_padded_cols(cols)] floats (hadamard() of it decodes the
/// row). The same single product per value as cq::decodeRotatedRows, so bit-identical to it.
inline void cq_row(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits, int64_t row,
                   int64_t cols, float *out) {
  const int64_t groups = cq_groups(cols);
  const uint8_t *p = packed + row * cq_row_bytes(cols, bits);
  for (int64_t g = 0; g < groups; ++g) {
    // The group's codebook times its norm, then its bytes decoded a whole byte (or 3-byte run) at a
    // time (an index at a time divided by 8 / bits, a run-time divisor, showed in a step's profile).
    const float n16 = half_to_float(norms[row * groups + g]);
    float scaled[16];
    for (int c = 0; c < (1 << bits); ++c)
      scaled[c] = codebook[c] * n16;
    cq_group_decode(p + g * 16 * bits, bits, scaled, out + g * cq_group, 1);
  }
}

/// needle.unpad_rows: [rows][padded] -> [rows][width], keeping the first width of each row.
/// out may equal in (rows move forward only).
inline void unpad_rows(const float *in, int64_t rows, int64_t padded, int64_t width, float *out) {
  for (int64_t r = 0; r < rows; ++r)
    std::memmove(out + r * width, in + r * padded, static_cast<size_t>(width) * sizeof(float));
}

/// needle.matmul on float weights: y = W x, W [rows][cols] row-major. y must not overlap x.
inline void matvec(const float *w, int64_t rows, int64_t cols, const float *x, float *y) {
  for (int64_t r = 0; r < rows; ++r)
    y[r] = dot(w + r * cols, x, cols);
}

// ---------------------------------------------------------------------------------------------
// Norms and RoPE
// ---------------------------------------------------------------------------------------------

/// unit(x) = x / sqrt(mean(x²) + eps) over n values. out may equal x.
inline void unit_norm(const float *x, int64_t n, float eps, float *out) {
  const float inverse = rms_inverse(x, n, eps);
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * inverse;
}

/// needle.zc_norm: x [n_total] is `heads` heads of d = n_total / heads; each head becomes
/// (1 + scale) ⊙ unit(head), scale [d] shared by all heads (heads = 1: the whole vector).
/// scale may be null (plain unit). out may equal x.
inline void zc_norm(const float *x, const float *scale, int64_t n_total, int64_t heads, float eps, float *out) {
  const int64_t d = n_total / heads;
  for (int64_t h = 0; h < heads; ++h) {
    const float *xh = x + h * d;
    float *oh = out + h * d;
    const float inverse = rms_inverse(xh, d, eps);
    for (int64_t i = 0; i < d; ++i)
      oh[i] = xh[i] * inverse * (scale ? 1.0f + scale[i] : 1.0f);
  }
}

/// needle.rope, rotate-half, in place on x [heads][d] (d even) at position t: pair (f, f + d/2)
/// turns by t·theta^(-2f/d). The angle, cos and sin are formed in double and rounded to f32 as
/// reference::rope does (model.md's choice; the frequency here within f ulps of its pow), once per
/// f and shared by all heads.
inline void rope(float *x, int64_t heads, int64_t d, int64_t t, double theta) {
  const int64_t half = d / 2;
  // theta^(-2f/d) by products of theta^(-2/d), in double: off from pow's by f ulps, and one pow per
  // call instead of half of d.
  const double ratio = std::pow(theta, -2.0 / static_cast<double>(d));
  double frequency = 1.0;
  for (int64_t f = 0; f < half; ++f, frequency *= ratio) {
    const double angle = static_cast<double>(t) * frequency;
    const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
    for (int64_t h = 0; h < heads; ++h) {
      float *head = x + h * d;
      const float a = head[f], b = head[f + half];
      head[f] = a * c - b * s;
      head[f + half] = b * c + a * s;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The four mHC lanes: always one contiguous [4][d] block, lane l at lanes + l·d.
// ---------------------------------------------------------------------------------------------

/// needle.lanes_init: all four lanes = x [d].
inline void lanes_init(const float *x, int64_t d, float *lanes) {
  for (int l = 0; l < 4; ++l)
    std::memcpy(lanes + l * d, x, static_cast<size_t>(d) * sizeof(float));
}

/// needle.lane_norm: nx [4d] = unit(concat(lanes)) — the lanes are contiguous, so this is
/// unit() over 4d values. nx may equal lanes.
inline void lane_norm(const float *lanes, int64_t d, float eps, float *nx) { unit_norm(lanes, 4 * d, eps, nx); }

#if NEEDLE_RT_X86_KERNELS
/// The constants of Cephes' expf, which avx2_exp and avx512_exp share.
struct CephesExp {
  static constexpr float lowest = -87.3f, log2e = 1.44269504088896341f;
  static constexpr float ln2_high = 0.693359375f, ln2_low = -2.12194440e-4f; // ln 2 in two parts: r exact
  static constexpr float poly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                    4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
};

/// e^x for x <= 0, 8 at a time, within 2^-22 relative (Cephes' expf: x = n·ln 2 + r,
/// |r| <= ln 2 / 2, e^r by a degree-7 polynomial, times 2^n); x below -87.3 (and -inf) gives
/// e^-87.3, about 1.2e-38, which no sum of softmax weights notices.
NEEDLE_RT_AVX2 inline __m256 avx2_exp(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(CephesExp::lowest), x); // x second: a NaN stays NaN
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(CephesExp::log2e), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CephesExp::ln2_high), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CephesExp::ln2_low), r);
  __m256 p = _mm256_set1_ps(CephesExp::poly[0]);
  for (int c = 1; c < 6; ++c)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CephesExp::poly[c]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}

/// ln x for a positive normal x, 8 at a time, within about 2^-22 relative (Cephes' logf: x =
/// m·2^e with m in [sqrt(1/2), sqrt(2)); ln m = (m − 1) − (m − 1)²/2 + (m − 1)³ times a degree-8
/// polynomial; plus e·ln 2 in two parts). A NaN stays NaN (so a Sinkhorn row holding one turns
/// all NaN, as the portable one does).
NEEDLE_RT_AVX2 inline __m256 avx2_log(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(126)); // x = m·2^e, m in [1/2, 1)
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x3F000000)));
  const __m256 small = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ); // then 2m, e − 1
  e = _mm256_sub_epi32(e, _mm256_and_si256(_mm256_castps_si256(small), _mm256_set1_epi32(1)));
  m = _mm256_sub_ps(_mm256_add_ps(m, _mm256_and_ps(m, small)), _mm256_set1_ps(1.0f));
  static constexpr float kPoly[] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                                    -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                                    2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
  __m256 p = _mm256_set1_ps(kPoly[0]);
  for (int c = 1; c < 9; ++c)
    p = _mm256_fmadd_ps(p, m, _mm256_set1_ps(kPoly[c]));
  const __m256 z = _mm256_mul_ps(m, m), n = _mm256_cvtepi32_ps(e);
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, m), z);
  y = _mm256_fmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  const __m256 ln = _mm256_fmadd_ps(n, _mm256_set1_ps(0.693359375f), _mm256_add_ps(m, y));
  return _mm256_or_ps(ln, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// σ(x) 8 at a time: 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, so avx2_exp only sees
/// e^-|x|. Below its clamp (|x| > 87.3, where e^-|x| is under the smallest normal float) e^-|x|
/// counts as 0, so σ is exactly 0 or 1 there (the portable sigmoid's is within the smallest
/// normal of it); a NaN stays NaN.
NEEDLE_RT_AVX2 inline __m256 avx2_sigmoid(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), minus_abs = _mm256_or_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 kept = _mm256_cmp_ps(minus_abs, _mm256_set1_ps(-87.3f), _CMP_NLT_UQ); // or NaN
  const __m256 e = _mm256_and_ps(avx2_exp(minus_abs), kept);                         // e^-|x|
  return _mm256_div_ps(_mm256_blendv_ps(one, e, x), _mm256_add_ps(one, e));          // x < 0 (its sign bit): e
}
#endif

/// Log-domain Sinkhorn on a row-major 4x4 in place: 20 rounds of subtracting each row's, then
/// each column's, logsumexp (max-shifted so exp cannot overflow), then exp. Columns of the
/// result sum to 1, rows nearly.
inline void sinkhorn4(float *m) {
  for (int round = 0; round < 20; ++round)
    for (int pass = 0; pass < 2; ++pass) {
      // pass 0: rows (stride 1 within, 4 between); pass 1: columns (stride 4 within, 1 between).
      const int within = pass == 0 ? 1 : 4, between = pass == 0 ? 4 : 1;
      for (int line = 0; line < 4; ++line) {
        float *v = m + line * between;
        float top = v[0];
        for (int i = 1; i < 4; ++i)
          top = v[i * within] > top ? v[i * within] : top;
        float sum = 0.0f;
        for (int i = 0; i < 4; ++i)
          sum += std::exp(v[i * within] - top);
        const float lse = top + std::log(sum);
        for (int i = 0; i < 4; ++i)
          v[i * within] -= lse;
      }
    }
  for (int i = 0; i < 16; ++i)
    m[i] = std::exp(m[i]);
}

#if NEEDLE_RT_X86_KERNELS
/// sinkhorn4 with AVX2: rows 0–1 and 2–3 in two vectors, a row per 128-bit half. A row's max and
/// sum take two swaps within its half, a column's the other vector and the other half; e^x and
/// the logs 8 at a time (avx2_exp, avx2_log).
NEEDLE_RT_AVX2 inline void sinkhorn4_avx2(float *m) {
  __m256 v[2] = {_mm256_loadu_ps(m), _mm256_loadu_ps(m + 8)};
  for (int round = 0; round < 20; ++round) {
    for (int h = 0; h < 2; ++h) {
      __m256 top = _mm256_max_ps(v[h], _mm256_permute_ps(v[h], 0xB1));
      top = _mm256_max_ps(top, _mm256_permute_ps(top, 0x4E));
      const __m256 e = avx2_exp(_mm256_sub_ps(v[h], top));
      __m256 sum = _mm256_add_ps(e, _mm256_permute_ps(e, 0xB1));
      sum = _mm256_add_ps(sum, _mm256_permute_ps(sum, 0x4E));
      v[h] = _mm256_sub_ps(v[h], _mm256_add_ps(top, avx2_log(sum)));
    }
    __m256 top = _mm256_max_ps(v[0], v[1]);
    top = _mm256_max_ps(top, _mm256_permute2f128_ps(top, top, 1));
    __m256 sum = _mm256_add_ps(avx2_exp(_mm256_sub_ps(v[0], top)), avx2_exp(_mm256_sub_ps(v[1], top)));
    sum = _mm256_add_ps(sum, _mm256_permute2f128_ps(sum, sum, 1));
    const __m256 lse = _mm256_add_ps(top, avx2_log(sum));
    v[0] = _mm256_sub_ps(v[0], lse);
    v[1] = _mm256_sub_ps(v[1], lse);
  }
  _mm256_storeu_ps(m, avx2_exp(v[0]));
  _mm256_storeu_ps(m + 8, avx2_exp(v[1]));
}
#endif

/// needle.mhc_gates from the projections pre = Φ_pre nx [4], post = Φ_post nx [4], res = Φ_res
/// nx [16] of the block at lane position `position` (one = one-hot at position % 4):
///   h_pre  = σ(a[0]·pre + b_pre + 8·one − 4)                  [4]
///   h_post = 2σ(a[1]·post + b_post − 4·(1 − one))             [4]
///   mix    = sinkhorn(a[2]·reshape(res, 4×4) + b_res)          [16], row-major
/// by `sinkhorn` (sinkhorn4's signature).
template <typename Sinkhorn>
inline void mhc_gates_with(const float *pre, const float *post, const float *res, const float *a, const float *b_pre,
                           const float *b_post, const float *b_res, int64_t position, float *h_pre, float *h_post,
                           float *mix, Sinkhorn sinkhorn) {
  const int64_t own = position % 4;
  for (int l = 0; l < 4; ++l) {
    const float one = l == own ? 1.0f : 0.0f;
    h_pre[l] = sigmoid(a[0] * pre[l] + b_pre[l] + 8.0f * one - 4.0f);
    h_post[l] = 2.0f * sigmoid(a[1] * post[l] + b_post[l] - 4.0f * (1.0f - one));
  }
  for (int i = 0; i < 16; ++i)
    mix[i] = a[2] * res[i] + b_res[i];
  sinkhorn(mix);
}

#if NEEDLE_RT_X86_KERNELS
/// mhc_gates with sinkhorn4_avx2.
NEEDLE_RT_AVX2 inline void mhc_gates_avx2(const float *pre, const float *post, const float *res, const float *a,
                                          const float *b_pre, const float *b_post, const float *b_res, int64_t position,
                                          float *h_pre, float *h_post, float *mix) {
  mhc_gates_with(pre, post, res, a, b_pre, b_post, b_res, position, h_pre, h_post, mix, sinkhorn4_avx2);
}
#endif

/// needle.mhc_gates (mhc_gates_with), its Sinkhorn with AVX2 where the build has it.
inline void mhc_gates(const float *pre, const float *post, const float *res, const float *a, const float *b_pre,
                      const float *b_post, const float *b_res, int64_t position, float *h_pre, float *h_post,
                      float *mix) {
#if NEEDLE_RT_TARGETS_AVX2
  mhc_gates_avx2(pre, post, res, a, b_pre, b_post, b_res, position, h_pre, h_post, mix);
#else
  mhc_gates_with(pre, post, res, a, b_pre, b_post, b_res, position, h_pre, h_post, mix, sinkhorn4);
#endif
}

/// needle.lane_read: u [d] = Σ_l h_pre[l] · lane_l. u must not overlap lanes.
inline void lane_read(const float *lanes, int64_t d, const float *h_pre, float *u) {
  for (int64_t e = 0; e < d; ++e)
    u[e] = h_pre[0] * lanes[e] + h_pre[1] * lanes[d + e] + h_pre[2] * lanes[2 * d + e] + h_pre[3] * lanes[3 * d + e];
}

/// needle.lane_write: out_i = Σ_k mix[i·4 + k] · lane_k + h_post[i] · y, all four lanes from the
/// lanes as they were. Column by column (all four values of element e read before any is
/// written), so out may equal lanes (in-place update); otherwise they must not overlap. y [d]
/// must not overlap out.
inline void lane_write(const float *lanes, int64_t d, const float *h_post, const float *mix, const float *y,
                       float *out) {
  for (int64_t e = 0; e < d; ++e) {
    const float l0 = lanes[e], l1 = lanes[d + e], l2 = lanes[2 * d + e], l3 = lanes[3 * d + e], ye = y[e];
    for (int i = 0; i < 4; ++i) {
      const float *m = mix + 4 * i;
      out[i * d + e] = h_post[i] * ye + ((m[0] * l0 + m[1] * l1) + (m[2] * l2 + m[3] * l3));
    }
  }
}

/// needle.lane_mean: out [d] = (lane_0 + lane_1 + lane_2 + lane_3) / 4 (a block's cell; the input
/// of the final norm). out must not overlap lanes 1..3 (it may equal lane 0).
inline void lane_mean(const float *lanes, int64_t d, float *out) {
  for (int64_t e = 0; e < d; ++e)
    out[e] = ((lanes[e] + lanes[d + e]) + (lanes[2 * d + e] + lanes[3 * d + e])) * 0.25f;
}

// ---------------------------------------------------------------------------------------------
// Engram
// ---------------------------------------------------------------------------------------------

/// Stores token `token` of position t in the engram token ring: ring [capacity] int32, token of
/// position p at ring[p % capacity]. capacity >= max(orders) keeps every token a hash reads.
/// Call it before engram_slot / engram_gather for position t. Never needs clearing: slots of
/// positions before 0 are never read.
inline void engram_remember(int32_t *ring, int64_t capacity, int64_t t, int32_t token) { ring[t % capacity] = token; }

/// The slot of table oi·E_h + h for order `order` at position t, exactly reference::engramSlot
/// (uint32 arithmetic mod 2^32):
///   acc = 0x9E3779B9·(oi·E_h + h + 1); acc = (acc ^ tok[t−i])·0x01000193 for i < order
///   (tok before position 0 is 0); acc ^= acc >> 15; slot = acc mod slots.
/// Tokens come from the ring of engram_remember (capacity >= order).
inline uint32_t engram_slot(const int32_t *ring, int64_t capacity, int64_t t, int64_t order_index, int64_t order,
                            int64_t head, int64_t heads_per_order, int64_t slots) {
  uint32_t acc = 0x9E3779B9u * static_cast<uint32_t>(order_index * heads_per_order + head + 1);
  for (int64_t i = 0; i < order; ++i) {
    const uint32_t token = t - i >= 0 ? static_cast<uint32_t>(ring[(t - i) % capacity]) : 0u;
    acc = (acc ^ token) * 0x01000193u;
  }
  acc ^= acc >> 15;
  return acc % static_cast<uint32_t>(slots);
}

/// The engram rows of position t: for each order orders[oi] (n_orders of them) and head h <
/// heads, row `slot` of table oi·heads + h, fetched by fetch(index, row) with index =
/// table·slots + slot (the row of the tables seen as one [tables·slots] matrix), or zeros when
/// t < order − 1; concatenated in table order, `width` floats each, into out. Every row is first
/// asked for by prefetch(index): the rows lie anywhere in tables of megabytes, so each costs a
/// miss and a page walk, which one after another showed in a decode step's profile.
template <typename FetchRow, typename PrefetchRow>
inline void engram_rows(const int32_t *ring, int64_t capacity, int64_t t, const int64_t *orders, int64_t n_orders,
                        int64_t heads, int64_t slots, int64_t width, FetchRow fetch, PrefetchRow prefetch, float *out) {
  for (int64_t oi = 0; oi < n_orders; ++oi)
    for (int64_t h = 0; h < heads && t >= orders[oi] - 1; ++h)
      prefetch((oi * heads + h) * slots + engram_slot(ring, capacity, t, oi, orders[oi], h, heads, slots));
  for (int64_t oi = 0; oi < n_orders; ++oi)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t table = oi * heads + h;
      float *row = out + table * width;
      if (t < orders[oi] - 1) {
        for (int64_t i = 0; i < width; ++i)
          row[i] = 0.0f;
        continue;
      }
      fetch(table * slots + engram_slot(ring, capacity, t, oi, orders[oi], h, heads, slots), row);
    }
}

/// needle.engram_gather on CQ tables [n_orders·heads, slots, sub_dim]: each row in the rotated
/// domain (cq_row), padded to whole groups: out [n_orders·heads·cq_padded_cols(sub_dim)].
inline void engram_gather(const int32_t *ring, int64_t capacity, int64_t t, const int64_t *orders, int64_t n_orders,
                          int64_t heads, const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                          int64_t slots, int64_t sub_dim, float *out) {
  engram_rows(
      ring, capacity, t, orders, n_orders, heads, slots, cq_padded_cols(sub_dim),
      [&](int64_t index, float *row) { cq_row(packed, norms, codebook, bits, index, sub_dim, row); },
      [&](int64_t index) {
        prefetch_bytes(packed + index * cq_row_bytes(sub_dim, bits), cq_row_bytes(sub_dim, bits));
        prefetch_bytes(norms + index * cq_groups(sub_dim), cq_groups(sub_dim) * static_cast<int64_t>(sizeof(uint16_t)));
      },
      out);
}

/// needle.engram_gather on float tables [n_orders·heads][slots][sub_dim]: the rows as stored (no
/// rotation, no padding), into out [n_orders·heads·sub_dim].
inline void engram_gather_f32(const int32_t *ring, int64_t capacity, int64_t t, const int64_t *orders, int64_t n_orders,
                              int64_t heads, const float *tables, int64_t slots, int64_t sub_dim, float *out) {
  engram_rows(
      ring, capacity, t, orders, n_orders, heads, slots, sub_dim,
      [&](int64_t index, float *row) {
        std::memcpy(row, tables + index * sub_dim, static_cast<size_t>(sub_dim) * sizeof(float));
      },
      [&](int64_t index) { prefetch_bytes(tables + index * sub_dim, sub_dim * static_cast<int64_t>(sizeof(float))); },
      out);
}

/// needle.gather: out [cols] = row `row` of a float matrix [rows][cols].
inline void gather_row(const float *matrix, int64_t cols, int64_t row, float *out) {
  std::memcpy(out, matrix + row * cols, static_cast<size_t>(cols) * sizeof(float));
}

/// needle.engram_gate: out = u + σ(⟨unit(u), unit(k)⟩ / sqrt(n)) · v. ⟨unit(u), unit(k)⟩ is
/// ⟨u, k⟩ times both rms inverses, so no normalized copies are needed. out may equal u or v.
inline void engram_gate(const float *u, const float *key, const float *value, int64_t n, float eps, float *out) {
  const float cosine = dot(u, key, n) * rms_inverse(u, n, eps) * rms_inverse(key, n, eps);
  const float gate = sigmoid(cosine / std::sqrt(static_cast<float>(n)));
  for (int64_t i = 0; i < n; ++i)
    out[i] = u[i] + gate * value[i];
}

// ---------------------------------------------------------------------------------------------
// Causal taps
// ---------------------------------------------------------------------------------------------

/// Floats of a causal_taps ring: stride·(count − 1) past inputs of n floats.
inline int64_t taps_state_floats(int64_t n, int64_t count, int64_t stride) { return stride * (count - 1) * n; }

/// needle.causal_taps at position t: out = Σ_{i<count} taps[i] ⊙ x_{t − stride·i} over the terms
/// with t − stride·i >= 0, taps [count][n].
/// State: ring [capacity][n] with capacity = stride·(count − 1) (taps_state_floats); the input of
/// position p sits in slot p % capacity. The oldest term x_{t−capacity} is in slot t % capacity,
/// which is read and then overwritten with x_t element by element, so a call both uses and
/// updates the ring. Positions must be fed 0, 1, 2, ... with no gap; the ring never needs
/// clearing (slots are only read for positions >= 0 already written). count = 1 needs no ring.
/// out may equal x.
inline void causal_taps(const float *x, int64_t n, const float *taps, int64_t count, int64_t stride, float *ring,
                        int64_t t, float *out) {
  const int64_t capacity = stride * (count - 1);
  if (capacity == 0) {
    for (int64_t e = 0; e < n; ++e)
      out[e] = taps[e] * x[e];
    return;
  }
  float *oldest = ring + (t % capacity) * n;
  const float *oldest_tap = taps + (count - 1) * n;
  const bool has_oldest = t >= capacity;
  for (int64_t e = 0; e < n; ++e) {
    const float xe = x[e], old = oldest[e];
    oldest[e] = xe;
    out[e] = taps[e] * xe + (has_oldest ? oldest_tap[e] * old : 0.0f);
  }
  for (int64_t i = 1; i < count - 1 && t - stride * i >= 0; ++i) {
    const float *past = ring + ((t - stride * i) % capacity) * n, *tap = taps + i * n;
    for (int64_t e = 0; e < n; ++e)
      out[e] += tap[e] * past[e];
  }
}

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------

/// needle.attention at position t: grouped-query attention over a KV ring.
/// State: k_cache [kv_heads·dqk][capacity] (transposed: each dimension's values of consecutive
/// slots are adjacent, so the scores of many positions are one contiguous axpy per dimension) and
/// v_cache [capacity][kv_heads·dv]; position p lives in slot p % capacity. The call first stores
/// k [kv_heads·dqk] and v [kv_heads·dv] of position t, then query head h (q [heads·dqk]) reads kv
/// head h / (heads / kv_heads) (kv_heads divides heads, as the dialect's verifier requires) over
/// the visible positions first..t, first = 0 for window 0
/// (global) or max(0, t − window + 1):
///   o_h = Σ_p softmax_p(q_h·k_p / sqrt(dqk)) v_p,   out [heads·dv] = concat_h o_h.
/// Contract: capacity >= window for a local block, capacity >= max_seq_len for a global one;
/// first is raised to t − capacity + 1 if needed so no overwritten slot is ever read. Positions
/// 0, 1, 2, ... in order; the caches never need clearing. Scratch: scores,
/// attention_scratch_floats(capacity, heads, kv_heads) floats. out must not overlap q, k, v, the caches or scores.
struct AttentionSpan {
  int64_t first_slot, count; // the visible positions: count of them, from ring slot first_slot on
  /// How many of them lie before the ring's end (the rest wrap to slot 0).
  int64_t before_end(int64_t capacity) const { return first_slot + count <= capacity ? count : capacity - first_slot; }
};

/// The most query heads attention_x86 takes at once (attention_avx512 takes needle3's six of a kv
/// head in one pass over its keys and values).
inline constexpr int kAttentionMostHeads = 6;

/// attention's scratch: the scores of the query heads it takes at once, at most the group of
/// heads / kv_heads (1 for the portable kernel, 2 for pairs).
constexpr int64_t attention_scratch_floats(int64_t capacity, int64_t heads, int64_t kv_heads) {
  const int64_t group = heads / kv_heads;
  return (group < kAttentionMostHeads ? group : kAttentionMostHeads) * capacity;
}

/// attention's first half: stores k and v of position t in the rings; returns what t sees.
inline AttentionSpan attention_store(const float *k, const float *v, int64_t k_width, int64_t v_width, int64_t window,
                                     int64_t capacity, int64_t t, float *k_cache, float *v_cache) {
  const int64_t slot = t % capacity;
  for (int64_t j = 0; j < k_width; ++j)
    k_cache[j * capacity + slot] = k[j];
  std::memcpy(v_cache + slot * v_width, v, static_cast<size_t>(v_width) * sizeof(float));
  int64_t first = window == 0 ? 0 : (t - window + 1 > 0 ? t - window + 1 : 0);
  if (t - first + 1 > capacity)
    first = t - capacity + 1;
  return {first % capacity, t - first + 1};
}

/// attention's second half, over `span`.
inline void attention_read(const float *q, int64_t heads, int64_t kv_heads, int64_t dqk, int64_t dv, int64_t capacity,
                           AttentionSpan span, const float *k_cache, const float *v_cache, float *scores, float *out) {
  const int64_t v_width = kv_heads * dv, group = heads / kv_heads, count = span.count;
  // The span in position order, as two runs of consecutive slots: to the ring's end, then on from 0.
  const int64_t head = span.before_end(capacity);
  const int64_t runs[2][2] = {{span.first_slot, head}, {0, count - head}}; // (first slot, length)
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(dqk));
  for (int64_t h = 0; h < heads; ++h) {
    const float *qh = q + h * dqk;
    const int64_t kv = h / group;
    // Scores: per dimension, one axpy over the positions.
    for (int64_t i = 0; i < count; ++i)
      scores[i] = 0.0f;
    for (int64_t d = 0; d < dqk; ++d) {
      const float qd = qh[d], *kd = k_cache + (kv * dqk + d) * capacity;
      float *s = scores;
      for (const auto &run : runs) {
        for (int64_t i = 0; i < run[1]; ++i)
          s[i] += qd * kd[run[0] + i];
        s += run[1];
      }
    }
    // Max-shifted exp (so exp never overflows), and their sum.
    float top = -INFINITY;
    for (int64_t i = 0; i < count; ++i) {
      scores[i] *= inv_sqrt;
      top = scores[i] > top ? scores[i] : top;
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < count; ++i)
      sum += scores[i] = std::exp(scores[i] - top);
    // o_h = Σ e_p v_p / Σ e_p: one division per head instead of one per weight.
    float *oh = out + h * dv;
    for (int64_t e = 0; e < dv; ++e)
      oh[e] = 0.0f;
    for (int64_t i = 0, slot = span.first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
      const float *vp = v_cache + slot * v_width + kv * dv;
      for (int64_t e = 0; e < dv; ++e)
        oh[e] += scores[i] * vp[e];
    }
    const float inv_sum = 1.0f / sum;
    for (int64_t e = 0; e < dv; ++e)
      oh[e] *= inv_sum;
  }
}

#if NEEDLE_RT_X86_KERNELS
// attention_read with AVX2 and FMA, query heads in pairs (two heads of one kv head): each key or
// value vector loaded feeds both heads, and 8 independent sums hide the FMA latency. The scores
// and the weighted values are summed in the portable kernel's order (over d per score, over the
// positions per output), fused; the softmax's normalizer is summed 8 lanes at a time.

/// The lanes of a vector below `live` (0..8): a mask for maskload / maskstore.
NEEDLE_RT_AVX2 inline __m256i avx2_first_lanes(int64_t live) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(live)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// acc[h][j] += b[h·b_stride] · vectors[j], for kHeads scalars and kVectors vectors.
template <int kHeads, int kVectors>
NEEDLE_RT_AVX2 inline void avx2_outer_fma(__m256 (&acc)[kHeads][kVectors], const __m256 (&vectors)[kVectors],
                                          const float *b, int64_t b_stride) {
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
    const __m256 scalar = _mm256_set1_ps(b[h * b_stride]);
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      acc[h][j] = _mm256_fmadd_ps(scalar, vectors[j], acc[h][j]);
  }
}

/// The scores of kHeads query heads (q: head after head, dqk each) for 8·kVectors consecutive
/// slots (k: the first slot's key of dimension 0, dimension d capacity floats further on), into
/// scores[h·stride + i]; kMasked: one vector, of the slots `live` selects only.
template <int kHeads, int kVectors, bool kMasked = false>
NEEDLE_RT_AVX2 inline void attention_score_block_avx2(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                      float *scores, int64_t stride, __m256i live = __m256i()) {
  static_assert(!kMasked || kVectors == 1, "a masked block is one vector");
  __m256 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t d = 0; d < dqk; ++d) {
    __m256 keys[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      keys[j] = kMasked ? _mm256_maskload_ps(k + d * capacity, live) : _mm256_loadu_ps(k + d * capacity + 8 * j);
    avx2_outer_fma(acc, keys, q + d, dqk);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      if (kMasked)
        _mm256_maskstore_ps(scores + h * stride, live, acc[h][j]);
      else
        _mm256_storeu_ps(scores + h * stride + 8 * j, acc[h][j]);
    }
}

/// The scores of kHeads query heads for `slots` consecutive slots from k (as above).
template <int kHeads>
NEEDLE_RT_AVX2 inline void attention_scores_avx2(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                 int64_t slots, float *scores, int64_t stride) {
  int64_t i = 0;
  for (; i + 32 <= slots; i += 32)
    attention_score_block_avx2<kHeads, 4>(q, dqk, k + i, capacity, scores + i, stride);
  for (; i + 8 <= slots; i += 8)
    attention_score_block_avx2<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride);
  if (i < slots)
    attention_score_block_avx2<kHeads, 1, true>(q, dqk, k + i, capacity, scores + i, stride,
                                                avx2_first_lanes(slots - i));
}

/// attention_softmax_avx2's second half from scores[i] on: scores[i..count) ← e^(scores·factor −
/// shift), each added into the 8 lanes of sum, 8 at a time (then a masked tail); returns sum.
NEEDLE_RT_AVX2 inline __m256 attention_exps_avx2(float *scores, int64_t i, int64_t count, __m256 factor, __m256 shift,
                                                 __m256 sum) {
  for (; i + 8 <= count; i += 8) {
    const __m256 e = avx2_exp(_mm256_fmsub_ps(_mm256_loadu_ps(scores + i), factor, shift));
    _mm256_storeu_ps(scores + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < count) {
    const __m256i tail = avx2_first_lanes(count - i);
    const __m256 e = _mm256_and_ps(avx2_exp(_mm256_fmsub_ps(_mm256_maskload_ps(scores + i, tail), factor, shift)),
                                   _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(scores + i, tail, e);
    sum = _mm256_add_ps(sum, e);
  }
  return sum;
}

/// scores[0..count) ← e^(scores·scale − max), returns 1 / their sum (as attention_read's softmax,
/// 8 at a time).
NEEDLE_RT_AVX2 inline float attention_softmax_avx2(float *scores, int64_t count, float scale) {
  const __m256 factor = _mm256_set1_ps(scale);
  __m256 top = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    top = _mm256_max_ps(top, _mm256_loadu_ps(scores + i));
  const __m256i tail = avx2_first_lanes(count - i);
  if (i < count) // lanes past count stay -inf
    top = _mm256_max_ps(top, _mm256_blendv_ps(top, _mm256_maskload_ps(scores + i, tail), _mm256_castsi256_ps(tail)));
  const __m256 shift = _mm256_mul_ps(_mm256_set1_ps(avx2_lane_max(top)), factor);
  return 1.0f / avx2_lane_sum(attention_exps_avx2(scores, 0, count, factor, shift, _mm256_setzero_ps()));
}

/// out[h·dv + 8j + l] = Σ_i scores[h·count + i] · v[slot_i][8j + l] · inv_sum[h] for kHeads heads
/// and 8·kVectors values (v: the kv head's first value of the block in slot 0; slots from
/// first_slot on, wrapping at capacity).
template <int kHeads, int kVectors>
NEEDLE_RT_AVX2 inline void attention_value_block_avx2(const float *scores, int64_t count, const float *v,
                                                      int64_t v_width, int64_t first_slot, int64_t capacity,
                                                      const float *inv_sum, int64_t dv, float *out) {
  __m256 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t i = 0, slot = first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
    __m256 values[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      values[j] = _mm256_loadu_ps(v + slot * v_width + 8 * j);
    avx2_outer_fma(acc, values, scores + i, count);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      _mm256_storeu_ps(out + h * dv + 8 * j, _mm256_mul_ps(acc[h][j], _mm256_set1_ps(inv_sum[h])));
}

/// The AVX2 blocks of attention_x86: the scores of kHeads query heads for `slots` consecutive
/// slots, and their weighted values for all dv (a multiple of 8); heads in pairs (6 heads' sums
/// of 4 vectors would need more than the 16 registers).
struct AttentionAvx2 {
  static constexpr int64_t width = 8;
  static constexpr int most_heads = 2;
  NEEDLE_RT_AVX2 static float softmax(float *scores, int64_t count, float scale) {
    return attention_softmax_avx2(scores, count, scale);
  }
  template <int kHeads>
  NEEDLE_RT_AVX2 static void scores(const float *q, int64_t dqk, const float *k, int64_t capacity, int64_t slots,
                                    float *scores, int64_t stride) {
    attention_scores_avx2<kHeads>(q, dqk, k, capacity, slots, scores, stride);
  }
  template <int kHeads>
  NEEDLE_RT_AVX2 static void values(const float *scores, int64_t count, const float *v, int64_t v_width,
                                    int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                    float *out) {
    int64_t e = 0;
    for (; e + 32 <= dv; e += 32)
      attention_value_block_avx2<kHeads, 4>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv, out + e);
    for (; e < dv; e += 8)
      attention_value_block_avx2<kHeads, 1>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv, out + e);
  }
};

/// attention_read for kHeads query heads of one kv head (q and out at the first head's; k and
/// v at the kv head's keys and values) on Blocks (AttentionAvx2, AttentionAvx512); dv is a
/// multiple of Blocks::width.
template <typename Blocks, int kHeads>
NEEDLE_RT_AVX2 inline void attention_heads_x86(const float *q, int64_t dqk, int64_t dv, int64_t v_width,
                                               int64_t capacity, AttentionSpan span, const float *k, const float *v,
                                               float *scores, float *out) {
  const int64_t count = span.count, head = span.before_end(capacity);
  Blocks::template scores<kHeads>(q, dqk, k + span.first_slot, capacity, head, scores, count);
  Blocks::template scores<kHeads>(q, dqk, k, capacity, count - head, scores + head, count);
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(dqk));
  float inv_sum[kHeads];
  for (int h = 0; h < kHeads; ++h)
    inv_sum[h] = Blocks::softmax(scores + h * count, count, inv_sqrt);
  Blocks::template values<kHeads>(scores, count, v, v_width, span.first_slot, capacity, inv_sum, dv, out);
}

/// attention on Blocks where dv is a multiple of Blocks::width (else attention_read): the query
/// heads of a kv head Blocks::most_heads at a time while that many are left, then in pairs, so a
/// key or value vector loaded feeds them all (the caches stream from L3 or L2 in a long decode).
/// Scratch: attention_scratch_floats(capacity, heads, kv_heads).
template <typename Blocks>
NEEDLE_RT_AVX2 inline void attention_x86(const float *q, const float *k, const float *v, int64_t heads,
                                         int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window, int64_t capacity,
                                         int64_t t, float *k_cache, float *v_cache, float *scores, float *out) {
  static_assert(Blocks::most_heads <= kAttentionMostHeads, "the scratch holds kAttentionMostHeads heads' scores");
  const int64_t v_width = kv_heads * dv, group = heads / kv_heads;
  const AttentionSpan span = attention_store(k, v, kv_heads * dqk, v_width, window, capacity, t, k_cache, v_cache);
  if (dv % Blocks::width != 0)
    return attention_read(q, heads, kv_heads, dqk, dv, capacity, span, k_cache, v_cache, scores, out);
  for (int64_t h = 0; h < heads;) {
    const int64_t kv = h / group, left = (kv + 1) * group - h; // heads from h on that read kv head kv
    const float *keys = k_cache + kv * dqk * capacity, *values = v_cache + kv * dv, *qh = q + h * dqk;
    float *oh = out + h * dv;
    const int taken = left >= Blocks::most_heads ? Blocks::most_heads : left >= 2 ? 2 : 1;
    if (taken == Blocks::most_heads)
      attention_heads_x86<Blocks, Blocks::most_heads>(qh, dqk, dv, v_width, capacity, span, keys, values, scores, oh);
    else if (taken == 2)
      attention_heads_x86<Blocks, 2>(qh, dqk, dv, v_width, capacity, span, keys, values, scores, oh);
    else
      attention_heads_x86<Blocks, 1>(qh, dqk, dv, v_width, capacity, span, keys, values, scores, oh);
    h += taken;
  }
}

/// attention with AVX2 and FMA where dv is a multiple of 8 (else attention_read). Scratch:
/// attention_scratch_floats(capacity, heads, kv_heads).
NEEDLE_RT_AVX2 inline void attention_avx2(const float *q, const float *k, const float *v, int64_t heads,
                                          int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window, int64_t capacity,
                                          int64_t t, float *k_cache, float *v_cache, float *scores, float *out) {
  attention_x86<AttentionAvx2>(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
}

// attention_x86's blocks with AVX-512F: AttentionAvx2's, 16 lanes a vector (twice the sums an FMA
// does, in the 32 registers twice the vectors), in the same order, so the outputs are the AVX2
// kernel's bit for bit. A masked load and store serve a block's tail.

/// avx2_exp with AVX-512F, 16 at a time: the same operations, so the same floats.
NEEDLE_RT_AVX512 inline __m512 avx512_exp(__m512 x) {
  x = _mm512_maskz_max_ps(kAll16, _mm512_set1_ps(CephesExp::lowest), x); // x second: a NaN stays NaN
  const __m512 n = _mm512_maskz_roundscale_ps(
      kAll16, _mm512_fmadd_ps(x, _mm512_set1_ps(CephesExp::log2e), _mm512_set1_ps(0.5f)), _MM_FROUND_TO_NEG_INF);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CephesExp::ln2_high), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CephesExp::ln2_low), r);
  __m512 p = _mm512_set1_ps(CephesExp::poly[0]);
  for (int c = 1; c < 6; ++c)
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CephesExp::poly[c]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i two_n = _mm512_maskz_slli_epi32(
      kAll16, _mm512_add_epi32(_mm512_maskz_cvtps_epi32(kAll16, n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(two_n));
}

/// attention_softmax_avx2 with AVX-512F: the max 16 at a time, the exponentials 16 at a time
/// and added into the normalizer's 8 lanes half by half (its order), the rest as it does; the
/// same floats.
NEEDLE_RT_AVX512 inline float attention_softmax_avx512(float *scores, int64_t count, float scale) {
  __m512 top = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    top = _mm512_maskz_max_ps(kAll16, top, _mm512_loadu_ps(scores + i));
  if (i < count) // lanes past count keep top
    top = _mm512_maskz_max_ps(kAll16, top, _mm512_mask_loadu_ps(top, avx512_first_lanes(count - i), scores + i));
  const float largest = avx2_lane_max(_mm256_max_ps(avx512_half<0>(top), avx512_half<1>(top)));
  const __m512 factor = _mm512_set1_ps(scale), shift = _mm512_mul_ps(_mm512_set1_ps(largest), factor);
  __m256 sum = _mm256_setzero_ps();
  for (i = 0; i + 16 <= count; i += 16) {
    const __m512 e = avx512_exp(_mm512_fmsub_ps(_mm512_loadu_ps(scores + i), factor, shift));
    _mm512_storeu_ps(scores + i, e);
    sum = _mm256_add_ps(_mm256_add_ps(sum, avx512_half<0>(e)), avx512_half<1>(e));
  }
  return 1.0f /
         avx2_lane_sum(attention_exps_avx2(scores, i, count, avx512_half<0>(factor), avx512_half<0>(shift), sum));
}

/// acc[h][j] += b[h·b_stride] · vectors[j] (avx2_outer_fma's, 16 lanes).
template <int kHeads, int kVectors>
NEEDLE_RT_AVX512 inline void avx512_outer_fma(__m512 (&acc)[kHeads][kVectors], const __m512 (&vectors)[kVectors],
                                              const float *b, int64_t b_stride) {
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h) {
    const __m512 scalar = _mm512_set1_ps(b[h * b_stride]);
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      acc[h][j] = _mm512_fmadd_ps(scalar, vectors[j], acc[h][j]);
  }
}

/// attention_score_block_avx2's, for 16·kVectors slots, of them the ones `live` selects (a block's
/// tail: one vector, kVectors 1).
template <int kHeads, int kVectors>
NEEDLE_RT_AVX512 inline void attention_score_block_avx512(const float *q, int64_t dqk, const float *k, int64_t capacity,
                                                          float *scores, int64_t stride, __mmask16 live = kAll16) {
  __m512 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t d = 0; d < dqk; ++d) {
    __m512 keys[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      keys[j] = _mm512_maskz_loadu_ps(live, k + d * capacity + 16 * j);
    avx512_outer_fma(acc, keys, q + d, dqk);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      _mm512_mask_storeu_ps(scores + h * stride + 16 * j, live, acc[h][j]);
}

/// attention_value_block_avx2's, for 16·kVectors values.
template <int kHeads, int kVectors>
NEEDLE_RT_AVX512 inline void attention_value_block_avx512(const float *scores, int64_t count, const float *v,
                                                          int64_t v_width, int64_t first_slot, int64_t capacity,
                                                          const float *inv_sum, int64_t dv, float *out) {
  __m512 acc[kHeads][kVectors] = {}; // in registers: every loop over it is unrolled
  for (int64_t i = 0, slot = first_slot; i < count; ++i, slot = slot + 1 == capacity ? 0 : slot + 1) {
    __m512 values[kVectors];
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      values[j] = _mm512_loadu_ps(v + slot * v_width + 16 * j);
    avx512_outer_fma(acc, values, scores + i, count);
  }
#pragma GCC unroll 8
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j)
      _mm512_storeu_ps(out + h * dv + 16 * j, _mm512_mul_ps(acc[h][j], _mm512_set1_ps(inv_sum[h])));
}

/// The AVX-512 blocks of attention_x86 (AttentionAvx2's, dv a multiple of 16), up to 6 heads at
/// once: 6 heads' sums of 4 vectors and the 4 vectors they multiply fit the 32 registers.
struct AttentionAvx512 {
  static constexpr int64_t width = 16;
  static constexpr int most_heads = kAttentionMostHeads;
  NEEDLE_RT_AVX512 static float softmax(float *scores, int64_t count, float scale) {
    return attention_softmax_avx512(scores, count, scale);
  }
  template <int kHeads>
  NEEDLE_RT_AVX512 static void scores(const float *q, int64_t dqk, const float *k, int64_t capacity, int64_t slots,
                                      float *scores, int64_t stride) {
    int64_t i = 0;
    for (; i + 64 <= slots; i += 64)
      attention_score_block_avx512<kHeads, 4>(q, dqk, k + i, capacity, scores + i, stride);
    for (; i + 16 <= slots; i += 16)
      attention_score_block_avx512<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride);
    if (i < slots)
      attention_score_block_avx512<kHeads, 1>(q, dqk, k + i, capacity, scores + i, stride,
                                              avx512_first_lanes(slots - i));
  }
  template <int kHeads>
  NEEDLE_RT_AVX512 static void values(const float *scores, int64_t count, const float *v, int64_t v_width,
                                      int64_t first_slot, int64_t capacity, const float *inv_sum, int64_t dv,
                                      float *out) {
    int64_t e = 0;
    for (; e + 64 <= dv; e += 64)
      attention_value_block_avx512<kHeads, 4>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv,
                                              out + e);
    for (; e < dv; e += 16)
      attention_value_block_avx512<kHeads, 1>(scores, count, v + e, v_width, first_slot, capacity, inv_sum, dv,
                                              out + e);
  }
};

/// attention with AVX-512F where dv is a multiple of 16, else attention_avx2. Scratch:
/// attention_scratch_floats(capacity, heads, kv_heads).
NEEDLE_RT_AVX512 inline void attention_avx512(const float *q, const float *k, const float *v, int64_t heads,
                                              int64_t kv_heads, int64_t dqk, int64_t dv, int64_t window,
                                              int64_t capacity, int64_t t, float *k_cache, float *v_cache,
                                              float *scores, float *out) {
  if (dv % AttentionAvx512::width != 0)
    return attention_avx2(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
  attention_x86<AttentionAvx512>(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
}
#endif

inline void attention(const float *q, const float *k, const float *v, int64_t heads, int64_t kv_heads, int64_t dqk,
                      int64_t dv, int64_t window, int64_t capacity, int64_t t, float *k_cache, float *v_cache,
                      float *scores, float *out) {
#if NEEDLE_RT_TARGETS_AVX512
  attention_avx512(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
#elif NEEDLE_RT_TARGETS_AVX2
  attention_avx2(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
#else
  const AttentionSpan span =
      attention_store(k, v, kv_heads * dqk, kv_heads * dv, window, capacity, t, k_cache, v_cache);
  attention_read(q, heads, kv_heads, dqk, dv, capacity, span, k_cache, v_cache, scores, out);
#endif
}

// ---------------------------------------------------------------------------------------------
// After attention
// ---------------------------------------------------------------------------------------------

/// sigmoid_gate in plain C++.
inline void sigmoid_gate_portable(const float *x, const float *gate, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * sigmoid(gate[i]);
}

#if NEEDLE_RT_X86_KERNELS
/// sigmoid_gate 8 at a time (avx2_sigmoid), the rest in plain C++. (A tail loop of its own here
/// made GCC 12 warn, wrongly, of an overflowing iteration wherever n was a multiple of 8.)
NEEDLE_RT_AVX2 inline void sigmoid_gate_avx2(const float *x, const float *gate, int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), avx2_sigmoid(_mm256_loadu_ps(gate + i))));
  sigmoid_gate_portable(x + i, gate + i, n - i, out + i);
}
#endif

/// needle.sigmoid_gate: out = x ⊙ σ(gate). out may equal x or gate.
inline void sigmoid_gate(const float *x, const float *gate, int64_t n, float *out) {
#if NEEDLE_RT_TARGETS_AVX2
  sigmoid_gate_avx2(x, gate, n, out);
#else
  sigmoid_gate_portable(x, gate, n, out);
#endif
}

/// needle.residual_gate: out = x + σ(gate) · zc(a; norm), with gate the block's scalar
/// attn_gate. The rms of a is taken first, so out may equal x or a.
inline void residual_gate(const float *x, const float *a, const float *norm, float gate, int64_t n, float eps,
                          float *out) {
  const float g = sigmoid(gate), inverse = rms_inverse(a, n, eps);
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] + g * (a[i] * inverse * (1.0f + norm[i]));
}

/// needle.block_update: out = x1 + mlp − u, the update the lanes receive. out may equal any input.
inline void block_update(const float *x1, const float *mlp, const float *u, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x1[i] + mlp[i] - u[i];
}

/// The weights of one block's Kronecker MLP (docs/model.md "MLP"). n = ba·bb >= d_model.
struct KronMlp {
  int64_t d_model, n, ba, bb;
  const float *norm;                   // [d_model], mlp_norm
  const float *w1a, *w2a, *w3a;        // [ba][ba]
  const float *w1b, *w2b, *w3b;        // [bb][bb]
  const float *d1, *d2, *b2, *d3, *d4; // [n]
  const float *cond_v;                 // [d_model][8]
  const float *cond_u;                 // [8][n]
  const int32_t *p1, *p2;              // [n], gathers z'[i] = z[p[i]]
};

/// K(z) = waᵀ Z wb, Z = z as [ba][bb] row-major: first T = Z wb into tmp, then out = waᵀ T, both
/// as row axpys (contiguous inner loops). z, tmp [ba·bb]; out [ba·bb] may equal z, not tmp.
inline void kronecker(const float *z, const float *wa, const float *wb, int64_t ba, int64_t bb, float *tmp,
                      float *out) {
  for (int64_t a = 0; a < ba; ++a) {
    float *t = tmp + a * bb;
    for (int64_t c = 0; c < bb; ++c)
      t[c] = 0.0f;
    for (int64_t b = 0; b < bb; ++b) {
      const float zab = z[a * bb + b];
      const float *w = wb + b * bb;
      for (int64_t c = 0; c < bb; ++c)
        t[c] += zab * w[c];
    }
  }
  for (int64_t r = 0; r < ba; ++r) {
    float *o = out + r * bb;
    for (int64_t c = 0; c < bb; ++c)
      o[c] = 0.0f;
    for (int64_t a = 0; a < ba; ++a) {
      const float war = wa[a * ba + r];
      const float *t = tmp + a * bb;
      for (int64_t c = 0; c < bb; ++c)
        o[c] += war * t[c];
    }
  }
}

/// Scratch floats kron_mlp needs: cond, and two ping-pong buffers, n each.
inline int64_t kron_mlp_scratch_floats(int64_t n) { return 3 * n; }

/// kron_mlp's first part: m = zc(x1; norm) padded to n into z, and cond (n floats each).
inline void kron_mlp_condition(const KronMlp &w, const float *x1, float eps, float *cond, float *z) {
  const int64_t D = w.d_model, n = w.n;
  float *a = z;
  zc_norm(x1, w.norm, D, 1, eps, a);
  for (int64_t i = D; i < n; ++i)
    a[i] = 0.0f;
  // mix = softmax over 8 of cond_vᵀ m (cond_v is [D][8]: row i scales m[i]), in 4 partial sums: one
  // chain of D FMAs per column was this MLP's latency.
  float mix[8];
  rows8_dots<4>(reinterpret_cast<const float(*)[8]>(w.cond_v), a, D, mix);
  float top = mix[0], sum = 0.0f;
  for (int j = 1; j < 8; ++j)
    top = mix[j] > top ? mix[j] : top;
  for (int j = 0; j < 8; ++j)
    sum += mix[j] = std::exp(mix[j] - top);
  for (int j = 0; j < 8; ++j)
    mix[j] /= sum;
  for (int64_t i = 0; i < n; ++i) { // one pass: cond_u's rows are read side by side
    float c = 1.0f;
    for (int j = 0; j < 8; ++j)
      c += mix[j] * w.cond_u[j * n + i];
    cond[i] = c;
  }
}

/// x[i] ← x[i]·σ(x[i]) (silu), in place.
inline void silu_in_place(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] *= sigmoid(x[i]);
}

/// kron_mlp with its Kronecker product (kronecker's signature) and its silu pass (silu_in_place's)
/// as given, so the portable and the AVX2 MLP are one sequence.
template <typename Kronecker, typename Silu>
inline void kron_mlp_with(const KronMlp &w, const float *x1, float eps, float *scratch, float *out, Kronecker kron,
                          Silu silu) {
  const int64_t D = w.d_model, n = w.n;
  float *cond = scratch, *a = scratch + n, *b = scratch + 2 * n;
  kron_mlp_condition(w, x1, eps, cond, a);
  // a -> K_1 -> gather p1 into b -> silu -> K_2 -> gather p2 into a -> K_3.
  for (int64_t i = 0; i < n; ++i)
    a[i] *= w.d1[i];
  kron(a, w.w1a, w.w1b, w.ba, w.bb, b, a);
  for (int64_t i = 0; i < n; ++i)
    b[i] = w.d2[i] * cond[i] * a[w.p1[i]] + w.b2[i];
  silu(b, n);
  kron(b, w.w2a, w.w2b, w.ba, w.bb, a, b);
  for (int64_t i = 0; i < n; ++i)
    a[i] = b[w.p2[i]] * w.d3[i];
  kron(a, w.w3a, w.w3b, w.ba, w.bb, b, a);
  for (int64_t i = 0; i < D; ++i)
    out[i] = w.d4[i] * a[i];
}

/// needle.kron_mlp on x1 [d_model] into out [d_model], reference::kronMlp's steps (its sums in
/// other orders, within float rounding of it):
///   m = zc(x1; norm); cond = 1 + softmax(cond_vᵀ m) · cond_u; z = pad(m, n)
///   z = K_1(d1 ⊙ z)[p1]; z = K_2(silu(d2 ⊙ cond ⊙ z + b2))[p2]; z = K_3(d3 ⊙ z); out = (d4 ⊙ z)[:D]
/// Scratch: kron_mlp_scratch_floats(n) = 3n floats. out may equal x1 (x1 is read only first).
inline void kron_mlp(const KronMlp &w, const float *x1, float eps, float *scratch, float *out) {
  kron_mlp_with(w, x1, eps, scratch, out, kronecker, silu_in_place);
}

#if NEEDLE_RT_X86_KERNELS
/// out row i (width floats) = Σ_k coef[i·row_step + k·k_step] · m row k, for kRows rows and k <
/// count, width a multiple of 16: 16 columns of every row's sums at a time in registers (kRows x 2
/// vectors), each row of m loaded once for all the rows, the terms added in k's order.
template <int kRows>
NEEDLE_RT_AVX2 inline void avx2_combine_rows(const float *coef, int64_t row_step, int64_t k_step, const float *m,
                                             int64_t count, int64_t width, float *out) {
  for (int64_t c = 0; c < width; c += 16) {
    __m256 acc[kRows][2];
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i)
      acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < count; ++k) {
      const __m256 m0 = _mm256_loadu_ps(m + k * width + c), m1 = _mm256_loadu_ps(m + k * width + c + 8);
#pragma GCC unroll 4
      for (int i = 0; i < kRows; ++i) {
        const __m256 f = _mm256_broadcast_ss(coef + i * row_step + k * k_step);
        acc[i][0] = _mm256_fmadd_ps(f, m0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(f, m1, acc[i][1]);
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      _mm256_storeu_ps(out + i * width + c, acc[i][0]);
      _mm256_storeu_ps(out + i * width + c + 8, acc[i][1]);
    }
  }
}

/// avx2_combine_rows for `rows` rows, 4 at a time (8 chains of FMAs, 11 registers: of 2 x 4, 3 x
/// 4, 4 x 2 and 6 x 2 rows x vectors, the fastest under both GCC and Clang on 32 x 32; Clang
/// spills one of 3 x 4's), then one at a time.
NEEDLE_RT_AVX2 inline void avx2_combine_all_rows(const float *coef, int64_t row_step, int64_t k_step, const float *m,
                                                 int64_t count, int64_t rows, int64_t width, float *out) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    avx2_combine_rows<4>(coef + r * row_step, row_step, k_step, m, count, width, out + r * width);
  for (; r < rows; ++r)
    avx2_combine_rows<1>(coef + r * row_step, row_step, k_step, m, count, width, out + r * width);
}

/// kronecker with AVX2 and FMA for bb a multiple of 16 (else kronecker): the same two products,
/// T = Z wb (row a of T = Σ_b z[a·bb + b] · row b of wb) and out = waᵀ T (row r = Σ_a wa[a·ba + r]
/// · row a of T).
NEEDLE_RT_AVX2 inline void kronecker_avx2(const float *z, const float *wa, const float *wb, int64_t ba, int64_t bb,
                                          float *tmp, float *out) {
  if (bb % 16 != 0)
    return kronecker(z, wa, wb, ba, bb, tmp, out);
  avx2_combine_all_rows(z, bb, 1, wb, bb, ba, bb, tmp);
  avx2_combine_all_rows(wa, 1, ba, tmp, ba, ba, bb, out);
}

/// silu_in_place 8 at a time: x·σ(x) (avx2_sigmoid), so silu of a very negative x is -0 as in
/// the portable kernel (not x times avx2_exp's clamp, e^-87.3).
NEEDLE_RT_AVX2 inline void silu_in_place_avx2(float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(x + i, _mm256_mul_ps(v, avx2_sigmoid(v)));
  }
  silu_in_place(x + i, n - i);
}

/// kron_mlp with kronecker_avx2 and silu_in_place_avx2.
NEEDLE_RT_AVX2 inline void kron_mlp_avx2(const KronMlp &w, const float *x1, float eps, float *scratch, float *out) {
  kron_mlp_with(w, x1, eps, scratch, out, kronecker_avx2, silu_in_place_avx2);
}

/// avx2_combine_rows with AVX-512F: 16·kVectors columns of kRows rows' sums at a time in
/// registers, each row of m loaded once for all the rows, the terms added in k's order (so the
/// same floats as avx2_combine_rows). width is a multiple of 16·kVectors.
template <int kRows, int kVectors>
NEEDLE_RT_AVX512 inline void avx512_combine_rows(const float *coef, int64_t row_step, int64_t k_step, const float *m,
                                                 int64_t count, int64_t width, float *out) {
  for (int64_t c = 0; c < width; c += 16 * kVectors) {
    __m512 acc[kRows][kVectors] = {}; // in registers: every loop over it is unrolled
    for (int64_t k = 0; k < count; ++k) {
      __m512 row[kVectors];
#pragma GCC unroll 2
      for (int j = 0; j < kVectors; ++j)
        row[j] = _mm512_loadu_ps(m + k * width + c + 16 * j);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const __m512 f = _mm512_set1_ps(coef[i * row_step + k * k_step]);
#pragma GCC unroll 2
        for (int j = 0; j < kVectors; ++j)
          acc[i][j] = _mm512_fmadd_ps(f, row[j], acc[i][j]);
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 2
      for (int j = 0; j < kVectors; ++j)
        _mm512_storeu_ps(out + i * width + c + 16 * j, acc[i][j]);
  }
}

/// avx512_combine_rows for `rows` rows, 8 at a time (16 chains of FMAs where width is a multiple
/// of 32, as needle3's), then one at a time.
template <int kVectors>
NEEDLE_RT_AVX512 inline void avx512_combine_all_rows(const float *coef, int64_t row_step, int64_t k_step,
                                                     const float *m, int64_t count, int64_t rows, int64_t width,
                                                     float *out) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8)
    avx512_combine_rows<8, kVectors>(coef + r * row_step, row_step, k_step, m, count, width, out + r * width);
  for (; r < rows; ++r)
    avx512_combine_rows<1, kVectors>(coef + r * row_step, row_step, k_step, m, count, width, out + r * width);
}

/// kronecker_avx2's products with AVX-512F for bb a multiple of 16 (else kronecker_avx2): the same
/// floats, 16 lanes at a time.
NEEDLE_RT_AVX512 inline void kronecker_avx512(const float *z, const float *wa, const float *wb, int64_t ba, int64_t bb,
                                              float *tmp, float *out) {
  if (bb % 16 != 0) // kronecker_avx2's widths too
    return kronecker(z, wa, wb, ba, bb, tmp, out);
  if (bb % 32 == 0) {
    avx512_combine_all_rows<2>(z, bb, 1, wb, bb, ba, bb, tmp);
    avx512_combine_all_rows<2>(wa, 1, ba, tmp, ba, ba, bb, out);
  } else {
    avx512_combine_all_rows<1>(z, bb, 1, wb, bb, ba, bb, tmp);
    avx512_combine_all_rows<1>(wa, 1, ba, tmp, ba, ba, bb, out);
  }
}

/// kron_mlp with kronecker_avx512 and silu_in_place_avx2.
NEEDLE_RT_AVX512 inline void kron_mlp_avx512(const KronMlp &w, const float *x1, float eps, float *scratch, float *out) {
  kron_mlp_with(w, x1, eps, scratch, out, kronecker_avx512, silu_in_place_avx2);
}
#endif

// ---------------------------------------------------------------------------------------------
// Pooling heads (docs/model.md "Heads"): an online softmax over positions per (row, probe).
// ---------------------------------------------------------------------------------------------

/// Floats of one head's pooling state: rows·probes slots of (d + 2) floats each. Slot
/// s = r·probes + k starts at state + s·(d + 2) and holds [max, sum, acc[d]]: the largest score
/// so far, Σ_t e^(score_t − max) and Σ_t e^(score_t − max)·cell_{t,r}. All zeros = no position
/// kept (sum is >= 1 once one is), so a session is reset by zeroing it.
inline int64_t head_state_floats(int64_t rows, int64_t probes, int64_t d) { return rows * probes * (d + 2); }

/// Adds one position's cells to the pooling state (the caller skips pad tokens). cells[r] [d] is
/// the cell of row r (row 0: x0; row j: the j-th kept block's lane mean), probe_vectors
/// [rows][probes][d]. Score = ⟨cell_r, probe_rk⟩ / sqrt(d); when it beats the running max the old
/// sums are rescaled by e^(old − new), else the new cell is weighted by e^(score − max).
inline void head_pool_add(float *state, int64_t rows, int64_t probes, int64_t d, const float *const *cells,
                          const float *probe_vectors) {
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < probes; ++k) {
      float *slot = state + (r * probes + k) * (d + 2), *acc = slot + 2;
      const float x = dot(cells[r], probe_vectors + (r * probes + k) * d, d) * inv_sqrt;
      float keep = 1.0f, weight = 1.0f; // rescale of the old state, weight of the new cell
      if (slot[1] == 0.0f) {
        slot[0] = x;
      } else if (x > slot[0]) {
        keep = std::exp(slot[0] - x);
        slot[0] = x;
      } else {
        weight = std::exp(x - slot[0]);
      }
      slot[1] = slot[1] * keep + weight;
      for (int64_t e = 0; e < d; ++e)
        acc[e] = acc[e] * keep + weight * cells[r][e];
    }
}

/// Scratch floats head_pool_finish needs: one factor and one softmax weight per (row, probe).
inline int64_t head_finish_scratch_floats(int64_t rows, int64_t probes) { return 2 * rows * probes; }

/// The query mix of the pooled state into pooled [queries·d]:
///   R[r,k]   = unit(acc / sum) · gain[r,k]  = f_rk · acc, f_rk = gain / (sum·sqrt(mean((acc/sum)²) + eps))
///              (R = 0 when no position was kept);
///   w_q      = softmax over (r,k) of ⟨R[r,k], query_q⟩ / sqrt(d) + row_bias[q][r][k];
///   pooled_q = Σ_{r,k} w_q[r,k] · R[r,k].
/// gain [rows][probes], query [queries][d], row_bias [queries][rows][probes].
/// Scratch: head_finish_scratch_floats(rows, probes) = 2·rows·probes floats.
inline void head_pool_finish(const float *state, int64_t rows, int64_t probes, int64_t d, const float *gain,
                             const float *query, const float *row_bias, int64_t queries, float eps, float *scratch,
                             float *pooled) {
  const int64_t slots = rows * probes;
  float *factor = scratch, *weight = scratch + slots;
  for (int64_t s = 0; s < slots; ++s) {
    const float *slot = state + s * (d + 2), sum = slot[1];
    factor[s] =
        sum == 0.0f
            ? 0.0f
            : gain[s] / (sum * std::sqrt(dot(slot + 2, slot + 2, d) / (sum * sum) / static_cast<float>(d) + eps));
  }
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t q = 0; q < queries; ++q) {
    float top = -INFINITY, sum = 0.0f;
    for (int64_t s = 0; s < slots; ++s) {
      weight[s] = factor[s] * dot(state + s * (d + 2) + 2, query + q * d, d) * inv_sqrt + row_bias[q * slots + s];
      top = weight[s] > top ? weight[s] : top;
    }
    for (int64_t s = 0; s < slots; ++s)
      sum += weight[s] = std::exp(weight[s] - top);
    float *p = pooled + q * d;
    for (int64_t e = 0; e < d; ++e)
      p[e] = 0.0f;
    for (int64_t s = 0; s < slots; ++s) {
      const float c = weight[s] / sum * factor[s];
      const float *acc = state + s * (d + 2) + 2;
      for (int64_t e = 0; e < d; ++e)
        p[e] += c * acc[e];
    }
  }
}

/// The confidence head's output σ(proj · pooled + bias), proj [width], width = queries·d.
inline float head_confidence(const float *pooled, const float *proj, float bias, int64_t width) {
  return sigmoid(dot(proj, pooled, width) + bias);
}

/// The embedding head's output p / sqrt(Σ p² + 1e-12), p = proj · pooled, proj [out_dim][width].
/// out [out_dim] must not overlap pooled.
inline void head_embedding(const float *pooled, const float *proj, int64_t out_dim, int64_t width, float *out) {
  matvec(proj, out_dim, width, pooled, out);
  const float inverse = 1.0f / std::sqrt(dot(out, out, out_dim) + 1e-12f);
  for (int64_t i = 0; i < out_dim; ++i)
    out[i] *= inverse;
}

// ---------------------------------------------------------------------------------------------
// Flat entry points: where an op's kernel takes a struct, a condition or a value behind a
// pointer, these take only pointers and scalars, so the C++ and the object printers call every
// kernel of @step the same way (codegen/Lower/KernelProgram.h).
// ---------------------------------------------------------------------------------------------

/// head_pool_add for a position whose token is not the head's pad token.
inline void head_pool_add_unless_pad(int32_t token, int64_t pad, float *state, int64_t rows, int64_t probes, int64_t d,
                                     const float *const *cells, const float *probe_vectors) {
  if (token != pad)
    head_pool_add(state, rows, probes, d, cells, probe_vectors);
}

/// out[0] = head_confidence(..., bias[0], ...).
inline void head_confidence_into(const float *pooled, const float *proj, const float *bias, int64_t width, float *out) {
  out[0] = head_confidence(pooled, proj, bias[0], width);
}

/// residual_gate with its gate read from gate[0].
inline void residual_gate_from(const float *x, const float *a, const float *norm, const float *gate, int64_t n,
                               float eps, float *out) {
  residual_gate(x, a, norm, gate[0], n, eps, out);
}

/// out = RoPE(in) at position t; out may equal in.
inline void rope_into(const float *in, float *out, int64_t heads, int64_t d, int64_t t, double theta) {
  if (out != in)
    std::memmove(out, in, static_cast<size_t>(heads * d) * sizeof(float));
  rope(out, heads, d, t, theta);
}

/// kron_mlp on the kernels the compiler targets: AVX-512 or AVX2 behind #ifs, else portable.
inline void kron_mlp_native(const KronMlp &w, const float *x1, float eps, float *scratch, float *out) {
#if NEEDLE_RT_TARGETS_AVX512
  kron_mlp_avx512(w, x1, eps, scratch, out);
#elif NEEDLE_RT_TARGETS_AVX2
  kron_mlp_avx2(w, x1, eps, scratch, out);
#else
  kron_mlp(w, x1, eps, scratch, out);
#endif
}

/// kMlp (kron_mlp_native, kron_mlp_avx2, kron_mlp_avx512) with its weights as arguments, in
/// KronMlp's field order.
template <void (*kMlp)(const KronMlp &, const float *, float, float *, float *)>
inline void kron_mlp_flat_on(int64_t d_model, int64_t n, int64_t ba, int64_t bb, const float *norm, const float *w1a,
                             const float *w2a, const float *w3a, const float *w1b, const float *w2b, const float *w3b,
                             const float *d1, const float *d2, const float *b2, const float *d3, const float *d4,
                             const float *cond_v, const float *cond_u, const int32_t *p1, const int32_t *p2,
                             const float *x1, float eps, float *scratch, float *out) {
  kMlp({d_model, n, ba, bb, norm, w1a, w2a, w3a, w1b, w2b, w3b, d1, d2, b2, d3, d4, cond_v, cond_u, p1, p2}, x1, eps,
       scratch, out);
}

/// The C++ printer's call.
inline constexpr auto &kron_mlp_flat = kron_mlp_flat_on<kron_mlp_native>;
#if NEEDLE_RT_X86_KERNELS
/// The object's calls on x86-64 with AVX2, FMA and F16C, and with AVX-512F as well.
inline constexpr auto &kron_mlp_flat_avx2 = kron_mlp_flat_on<kron_mlp_avx2>;
inline constexpr auto &kron_mlp_flat_avx512 = kron_mlp_flat_on<kron_mlp_avx512>;
#endif

// ---------------------------------------------------------------------------------------------
// The session behind the C interface (docs/c-interface.md), shared by both backends: the
// emitted model supplies its facts and its step; these check the arguments and keep the header.
// ---------------------------------------------------------------------------------------------

/// What the interface needs to know of a compiled model. Offsets are bytes into the arena.
struct ModelFacts {
  int64_t arena_size, arena_align, outputs_end, max_seq_len, vocab_size, embedding_dim;
  int64_t logits;
  int64_t batch; // tokens one call of the step carries at most
  float confidence_bias;
};

/// tokens[0..n) at positions t.. through the model (1 <= n <= batch): writes their state, and
/// the last token's outputs, into the arena.
using StepFunction = void (*)(unsigned char *arena, const int32_t *tokens, int64_t n, int64_t t);

/// A head's output (the confidence, or the embedding) into out, from its pooling state in the
/// arena: computed when asked, so a feed does not pay for heads nobody reads.
using HeadFunction = void (*)(const unsigned char *arena, float *out);

/// The header's NEEDLE_* status codes.
enum : int { status_ok = 0, status_err_token = -2, status_err_full = -3, status_err_arg = -4 };

/// The session's header, at the start of its arena.
struct SessionHeader {
  int64_t position; // tokens held
};

// The header, every op's state and the outputs are zeroed; the KV, tap and token rings are only
// ever read at positions written since.
inline void session_reset(const ModelFacts &m, void *arena) {
  if (arena)
    std::memset(arena, 0, static_cast<size_t>(m.outputs_end));
}

inline void *session_open(const ModelFacts &m, void *arena, size_t size) {
  if (!arena || size < static_cast<size_t>(m.arena_size) ||
      reinterpret_cast<uintptr_t>(arena) % static_cast<uintptr_t>(m.arena_align))
    return nullptr;
  session_reset(m, arena);
  return arena;
}

// Every token is checked before any is fed, so an error leaves the session as it was.
inline int session_feed(const ModelFacts &m, StepFunction step, void *arena, const int32_t *tokens, size_t n) {
  if (!arena || (!tokens && n))
    return status_err_arg;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= m.vocab_size)
      return status_err_token;
  SessionHeader *h = static_cast<SessionHeader *>(arena);
  if (n > static_cast<size_t>(m.max_seq_len - h->position))
    return status_err_full;
  for (size_t i = 0; i < n;) {
    const int64_t count = static_cast<int64_t>(n - i) < m.batch ? static_cast<int64_t>(n - i) : m.batch;
    step(static_cast<unsigned char *>(arena), tokens + i, count, h->position);
    h->position += count;
    i += static_cast<size_t>(count);
  }
  return status_ok;
}

inline const float *session_logits(const ModelFacts &m, const void *arena) {
  return arena ? reinterpret_cast<const float *>(static_cast<const unsigned char *>(arena) + m.logits) : nullptr;
}

inline float session_confidence(const ModelFacts &m, HeadFunction head, const void *arena) {
  if (!arena)
    return 0.0f;
  if (static_cast<const SessionHeader *>(arena)->position == 0) // before any token: sigmoid of the bias
    return sigmoid(m.confidence_bias);
  float confidence = 0.0f;
  head(static_cast<const unsigned char *>(arena), &confidence);
  return confidence;
}

inline int session_embedding(const ModelFacts &m, HeadFunction head, const void *arena, float *out) {
  if (!arena || !out)
    return status_err_arg;
  if (static_cast<const SessionHeader *>(arena)->position == 0) // before any token: zeros
    std::memset(out, 0, static_cast<size_t>(m.embedding_dim) * sizeof(float));
  else
    head(static_cast<const unsigned char *>(arena), out);
  return status_ok;
}

inline size_t session_position(const void *arena) {
  return arena ? static_cast<size_t>(static_cast<const SessionHeader *>(arena)->position) : 0;
}

} // namespace needle_rt

#endif // NEEDLE_RUNTIME_H
