// needle_rt, the CQ kernels with AVX-512 VBMI and VNNI.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

// The fast mode with AVX-512 VBMI and VNNI, on the CqLutDword layout: vpermb looks up each byte
// in its own unit's table, and vpdpbusd adds a row's 4 entries into its 32-bit lane. The object
// backend lays the weights so and calls cq_matmul_dword_fast_avx512vnni for a CPU with both (Ice Lake,
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

/// cq_matmul_lut16_fast with AVX-512 VBMI and VNNI (bits 2 or 4), on a matrix in the CqLutDword layout.
NEEDLE_RT_AVX512_VNNI inline void cq_matmul_dword_fast_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                                  const float *codebook, int bits, int64_t rows,
                                                                  int64_t cols, const float *x_rot, float *y,
                                                                  int64_t stride, int64_t n) {
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
/// CqLutChunkMajor (the object backend's, where the CPU has them: cq_matmul_lut16_fast's signature), token
/// by token on byte planes of the pair tables: cq_matmul_chunkmajor_exact_avx512's floats, bit for bit.
NEEDLE_RT_AVX512_VNNI inline void cq_matmul_chunkmajor_exact_avx512vnni(const uint8_t *packed, const uint16_t *norms,
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
/// cq_matmul_lut16_fast's signature: what cq_matmul_dword_exact_avx512vnni does with a token alone on a
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
/// object backend's, where the CPU has them: cq_matmul_lut16_fast's signature): a token alone on a matrix
/// of kCq4PlaneTiles tiles or more on byte planes of the codebook's tables in fixed point
/// (cq4_plane_matvec_avx512vnni); other matrices, and runs of tokens, on
/// cq_matmul_dword_exact_avx512, which reads the weights once per 4 tokens.
NEEDLE_RT_AVX512_VNNI inline void cq_matmul_dword_exact_avx512vnni(const uint8_t *packed, const uint16_t *norms,
                                                                   const float *codebook, int bits, int64_t rows,
                                                                   int64_t cols, const float *x_rot, float *y,
                                                                   int64_t stride, int64_t n) {
  if (n == 1 && CqLut16::tiles(rows) >= kCq4PlaneTiles)
    cq4_plane_matvec_avx512vnni(packed, norms, codebook, rows, cq_groups(cols), x_rot, y);
  else
    cq_matmul_dword_exact_avx512(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

} // namespace needle_rt
#endif
