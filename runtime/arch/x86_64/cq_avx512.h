// needle_rt, the CQ kernels with AVX-512F.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// The exact mode's CQ2 with AVX-512 (F): a pair's 16 float entries fill one register, and one
// vpermps looks them up for 16 rows. Their own target attribute, as the AVX2 kernels': the object
// backend calls them only for a CPU with AVX-512F (and AVX2, FMA and F16C); C++ built for one
// reaches the CqLut16 ones through the #if in cq_matmul_lut16_exact (the CqLutDword one is the
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

/// cq_matmul_lut16_exact_avx512 for one CQ2 token (CqLut16): block by block, the pair tables of the
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

/// cq_matmul_lut16_exact with AVX-512F (and AVX2, FMA, F16C): CQ2 as cq_matmul_lut16_exact_avx2's, a
/// token alone on cq2_exact_matvec_avx512; CQ4, which needlec lays as CqLutDword for
/// cq_matmul_dword_exact_avx512 instead, in plain C++.
NEEDLE_RT_AVX512 inline void cq_matmul_lut16_exact_avx512(const uint8_t *packed, const uint16_t *norms,
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

/// kTokens tokens of cq_matmul_dword_exact_avx512: every tile's sums over each block, its
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
/// backend's, where the CPU has AVX-512F: cq_matmul_lut16_fast's signature), in runs of up to 4 tokens on
/// the codebook.
NEEDLE_RT_AVX512 inline void cq_matmul_dword_exact_avx512(const uint8_t *packed, const uint16_t *norms,
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
/// backend's, where the CPU has AVX-512F but not VBMI and VNNI: cq_matmul_lut16_fast's signature), token
/// by token on int32 pair tables.
NEEDLE_RT_AVX512 inline void cq_matmul_chunkmajor_exact_avx512(const uint8_t *packed, const uint16_t *norms,
                                                               const float *codebook, int, int64_t rows, int64_t cols,
                                                               const float *x_rot, float *y, int64_t stride,
                                                               int64_t n) {
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

/// cq_matmul_x8_exact_avx512 for one token.
NEEDLE_RT_AVX512 inline void cqx8_matvec_avx512(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                                                int64_t rows, int64_t groups, const float *x_rot, float *y) {
  Cq4RowsAvx512 kernel;
  kernel.codebook = _mm512_loadu_ps(codebook);
  cqx8_matvec_on(kernel, packed, norms, rows, groups, x_rot, y);
}

/// cq_matmul_x8_exact with AVX-512F (and AVX2, FMA, F16C): a token alone on cqx8_matvec_avx512, batches
/// as cq_matmul_x8_exact_avx2's.
NEEDLE_RT_AVX512 inline void cq_matmul_x8_exact_avx512(const uint8_t *packed, const uint16_t *norms,
                                                       const float *codebook, int /*bits*/, int64_t rows, int64_t cols,
                                                       const float *x_rot, float *y, int64_t stride, int64_t n) {
  cqx8_matmul_with(cqx8_matvec_avx512, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
}

} // namespace needle_rt
#endif
