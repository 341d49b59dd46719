// needle_rt, the Walsh-Hadamard rotation and CQ: layouts, the portable matvecs, row gathers.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Walsh-Hadamard rotation and CQ (docs/cq-format.md)
// ---------------------------------------------------------------------------------------------

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

/// Deals tokens j.. of n into runs for a batched kernel: run(std::integral_constant<int, k>{}, j)
/// for runs of k = kLongest tokens while they last, then one run of each smaller power of two that
/// fits (kLongest a power of two): runs of 8 take 15 tokens as 8 + 4 + 2 + 1.
template <int kLongest, typename Run> inline void token_runs(int64_t n, Run run, int64_t j = 0) {
  for (; j + kLongest <= n; j += kLongest)
    run(std::integral_constant<int, kLongest>{}, j);
  if constexpr (kLongest > 1)
    token_runs<kLongest / 2>(n, run, j);
}

/// Deals tokens 0..n into runs of kRun while they last, run(j), and the rest one by one,
/// single(j): for kernels where a shorter run costs more a token than a token alone (measured
/// in cq_avx2.h and cq_exact_neon.h).
template <int kRun, typename Run, typename Single> inline void runs_then_singles(int64_t n, Run run, Single single) {
  int64_t j = 0;
  for (; j + kRun <= n; j += kRun)
    run(j);
  for (; j < n; ++j)
    single(j);
}

/// A CqX8 matrix (needle_contract.h) read row by row, as cq_matvec_in and cq_matmul_in read a
/// layout (the C++ backend's exact CQ4).
struct CqX8Rows : CqX8 {
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

/// cq_matmul_x8_exact for one token on a row kernel `Rows`: block by block, kernel.at_block(x, count)
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

/// Row r's code of unit u in a tile's group of a CqLut16 or CqLutDword matrix.
template <typename Layout> inline unsigned cqlut_code(const uint8_t *tile_group, int64_t r, int64_t u) {
  return (tile_group[Layout::byte(r, u)] >> Layout::shift(u)) & 15u;
}

/// Decodes one row's group of a CqLut16-family layout, whose unit u's code (4 bits: its 4/bits
/// columns' indices, the first lowest) is code(u), into out[i·stride] = c[idx_i].
template <typename Code>
inline void cqlut_group_decode(int bits, Code code, const float *c, float *out, int64_t stride) {
  const int per_unit = 4 / bits, mask = (1 << bits) - 1;
  for (int u = 0; u < 32 * bits; ++u) {
    const unsigned units = code(u);
    for (int j = 0; j < per_unit; ++j)
      out[(per_unit * u + j) * stride] = c[(units >> (bits * j)) & mask];
  }
}

/// A CqLut16 or CqLutDword matrix read row by row, as cq_matvec_in and cq_matmul_in read a layout
/// (the exact mode's CQ2 in plain C++, cqlut_exact_matmul_portable; a row gathered, cq_row_panels).
/// Row r's bytes are Layout::byte(r % 16, 0) bytes into its tile's group, so a row's group is that
/// group seen from there.
template <typename Layout> struct CqLutRows {
  int bits; // 2 or 4
  const uint8_t *group(const uint8_t *packed, int64_t rows, int64_t groups, int64_t r, int64_t g) const {
    const int64_t at = CqLut16::offset(CqLut16::tiles(rows), groups, r / CqLut16::tile, g);
    return packed + CqLut16::tile_group_bytes(bits) * at + Layout::byte(r % CqLut16::tile, 0);
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
      const unsigned code = cqlut_code<Layout>(p, 0, u);
      float entry = 0.0f;
      for (int j = 0; j < per_unit; ++j)
        entry += c[(code >> (bits * j)) & mask] * x[per_unit * u + j];
      chain[u % 8] += entry;
    }
    return ((chain[0] + chain[1]) + (chain[2] + chain[3])) + ((chain[4] + chain[5]) + (chain[6] + chain[7]));
  }
  void group_decode(const uint8_t *p, const float *c, float *out, int64_t stride) const {
    cqlut_group_decode(bits, [p](int u) { return cqlut_code<Layout>(p, 0, u); }, c, out, stride);
  }
};
using CqLut16Rows = CqLutRows<CqLut16>;

/// A CqLutChunkMajor matrix read a row at a time (cq_row_panels): CqLutDword's bytes of row r,
/// the chunks of its tile's group `chunk_bytes` apart (its slab's tiles of 64 bytes).
struct CqChunkMajorRows {
  int bits; // 2 or 4
  int64_t chunk_bytes;
  static CqChunkMajorRows of_row(int bits, int64_t rows, int64_t r) {
    return {bits, 64 * CqLutChunkMajor::slab_size(CqLut16::tiles(rows), r / CqLut16::tile)};
  }
  const uint8_t *group(const uint8_t *packed, int64_t rows, int64_t groups, int64_t r, int64_t g) const {
    const int64_t chunk = CqLutChunkMajor::chunk(CqLut16::tiles(rows), groups, r / CqLut16::tile, g, 0, bits);
    return packed + chunk + CqLutDword::byte(r % CqLut16::tile, 0);
  }
  int64_t norm(int64_t rows, int64_t groups, int64_t r, int64_t g) const {
    return CqLutChunkMajor::norms(CqLut16::tiles(rows), groups, r / CqLut16::tile, g) + r % CqLut16::tile;
  }
  void group_decode(const uint8_t *p, const float *c, float *out, int64_t stride) const {
    const auto code = [&](int u) { return (p[chunk_bytes * (u / 8) + u % 4] >> CqLutDword::shift(u)) & 15u; };
    cqlut_group_decode(bits, code, c, out, stride);
  }
};

/// A matrix in the Halide kernels' tiles (cq_panel_tiled: `tile` rows a tile, each tile
/// element-major, so byte j of row t·tile + l is at (t·row_bytes + j)·tile + l, and its norms
/// alike) read a row at a time (cq_row_panels).
struct CqTiledRows {
  int bits;
  int64_t tile;
  const uint8_t *group(const uint8_t *packed, int64_t, int64_t groups, int64_t r, int64_t g) const {
    return packed + (r / tile * groups + g) * 16 * bits * tile + r % tile;
  }
  int64_t norm(int64_t, int64_t groups, int64_t r, int64_t g) const {
    return (r / tile * groups + g) * tile + r % tile;
  }
  void group_decode(const uint8_t *p, const float *c, float *out, int64_t stride) const {
    uint8_t bytes[16 * 4]; // the group's bytes, a tile's rows apart
    for (int k = 0; k < 16 * bits; ++k)
      bytes[k] = p[k * tile];
    cq_group_decode(bytes, bits, c, out, stride);
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

/// Row r of a CQ matrix of `rows` rows in the rotated domain, out[g·128 + i] = c[idx[r,g,i]] ·
/// n16[r,g], [cq_padded_cols(cols)] floats (hadamard() of it decodes the row), read from any
/// layout: the same single product per value as cq::decodeRotatedRows, so bit-identical to it.
template <typename Layout>
inline void cq_row_in(const Layout &layout, const uint8_t *packed, const uint16_t *norms, const float *codebook,
                      int bits, int64_t rows, int64_t cols, int64_t r, float *out) {
  const int64_t groups = cq_groups(cols);
  for (int64_t g = 0; g < groups; ++g) {
    // The group's codebook times its norm, then its bytes decoded by the layout a whole byte (or
    // 3-byte run) at a time where it can (an index at a time divided by 8 / bits, a run-time
    // divisor, showed in a step's profile).
    const float n16 = half_to_float(norms[layout.norm(rows, groups, r, g)]);
    float scaled[16];
    for (int c = 0; c < (1 << bits); ++c)
      scaled[c] = codebook[c] * n16;
    layout.group_decode(layout.group(packed, rows, groups, r, g), scaled, out + g * cq_group, 1);
  }
}

/// needle.cq_gather on the file's layout (cq_row_in; the file's rows need no count).
inline void cq_row(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits, int64_t row,
                   int64_t cols, float *out) {
  cq_row_in(CqRowMajor{bits}, packed, norms, codebook, bits, row + 1, cols, row, out);
}

/// needle.cq_gather on a matrix whose products needlec cut into `count` panels of rows, each laid
/// out as its kernel reads it: panel k holds panels[3k] rows in layout panels[3k + 1]
/// (CqPanelLayout; tiles of panels[3k + 2] rows) at packed[k] and norms[k]. The same floats as
/// cq_row on the file's layout.
inline void cq_row_panels(const uint8_t *const *packed, const uint16_t *const *norms, const int64_t *panels,
                          int64_t count, const float *codebook, int bits, int64_t row, int64_t cols, float *out) {
  int64_t k = 0;
  for (; k + 1 < count && row >= panels[cq_panel_fields * k]; ++k)
    row -= panels[cq_panel_fields * k];
  const int64_t *panel = panels + cq_panel_fields * k;
  const auto read = [&](const auto &layout) {
    cq_row_in(layout, packed[k], norms[k], codebook, bits, panel[0], cols, row, out);
  };
  switch (panel[1]) {
  case cq_panel_x8:
    return read(CqX8Rows{});
  case cq_panel_lut16:
    return read(CqLutRows<CqLut16>{bits});
  case cq_panel_lut_dword:
    return read(CqLutRows<CqLutDword>{bits});
  case cq_panel_chunk_major:
    return read(CqChunkMajorRows::of_row(bits, panel[0], row));
  case cq_panel_tiled:
    return read(CqTiledRows{bits, panel[2]});
  default:
    return read(CqRowMajor{bits});
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

} // namespace needle_rt
