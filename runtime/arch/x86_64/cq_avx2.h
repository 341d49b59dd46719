// needle_rt, the CQ kernels with AVX2, FMA and F16C.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

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

/// cq_matmul_x8_exact_avx2 for one token.
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

/// cq_matmul_x8_exact with AVX2, FMA and F16C (bits 4), one token alone on `matvec`: runs of 4 tokens,
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

/// cq_matmul_x8_exact with AVX2, FMA and F16C (bits 4).
NEEDLE_RT_AVX2 inline void cq_matmul_x8_exact_avx2(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                   int /*bits*/, int64_t rows, int64_t cols, const float *x_rot,
                                                   float *y, int64_t stride, int64_t n) {
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

/// cq_matmul_lut16_fast with AVX2, FMA and F16C (bits 2 or 4).
NEEDLE_RT_AVX2 inline void cq_matmul_lut16_fast_avx2(const uint8_t *packed, const uint16_t *norms,
                                                     const float *codebook, int bits, int64_t rows, int64_t cols,
                                                     const float *x_rot, float *y, int64_t stride, int64_t n) {
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

/// cq_matmul_lut16_exact_avx2 for one CQ2 token, on the pair tables: block by block, the tables of
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

/// cq_matmul_lut16_exact_avx2 for kTokens CQ2 tokens (token j's x_rot and y j·stride floats after
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

/// cq_matmul_lut16_exact with AVX2, FMA and F16C. CQ2: runs of 8 tokens decoded and multiplied
/// (8 sums and a decoded column fit the 16 registers; a decoded column serves every token of its
/// run), the rest one at a time on `matvec`: decoding costs about four passes of the pair tables
/// (BM_RuntimeCqRuns on needle3's 768 x 768: 24 µs a token alone, 93 µs a run of 2, 96 of 4, 141
/// of 8), so only a run of 8 pays for it. CQ4, which needlec lays as CqX8 instead, in plain C++.
NEEDLE_RT_AVX2 inline void cqlut_exact_matmul_with(CqLayoutMatvec matvec, const uint8_t *packed, const uint16_t *norms,
                                                   const float *codebook, int bits, int64_t rows, int64_t cols,
                                                   const float *x_rot, float *y, int64_t stride, int64_t n) {
  if (bits != 2)
    return cqlut_exact_matmul_portable(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
  const int64_t groups = cq_groups(cols);
  runs_then_singles<8>(
      n,
      [&](int64_t j) {
        cq2_exact_tokens_avx2<8>(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride, stride);
      },
      [&](int64_t j) { matvec(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride); });
}

/// cq_matmul_lut16_exact with AVX2, FMA and F16C: a token alone on the pair tables' byte planes.
NEEDLE_RT_AVX2 inline void cq_matmul_lut16_exact_avx2(const uint8_t *packed, const uint16_t *norms,
                                                      const float *codebook, int bits, int64_t rows, int64_t cols,
                                                      const float *x_rot, float *y, int64_t stride, int64_t n) {
  cqlut_exact_matmul_with(cq2_exact_matvec_avx2, packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

} // namespace needle_rt
#endif
