// needle_rt, the exact mode's CQ kernels with NEON: CQ2 and CQ4 on CqLut16, CQ4 on CqX8.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_NEON_KERNELS
namespace needle_rt {

// Every aarch64 CPU has NEON (and FCVTL for the fp16 norms), so these carry no target attribute.
// A float is looked up as its 4 bytes in 4 byte planes of 16 entries (tbl: 16 indices at once),
// then two rounds of zips put each index's bytes back together: the AVX2 kernels' byte-plane
// lookups (cq_avx2.h) on 128-bit vectors, which hold the same CqLut16 and CqX8 layouts.

/// 16 floats as 4 byte planes: plane b holds byte b of each, in order (two rounds of unzips).
inline uint8x16x4_t neon_byte_planes(const float32x4_t f[4]) {
  const uint8x16_t f0 = vreinterpretq_u8_f32(f[0]), f1 = vreinterpretq_u8_f32(f[1]);
  const uint8x16_t f2 = vreinterpretq_u8_f32(f[2]), f3 = vreinterpretq_u8_f32(f[3]);
  const uint8x16_t even01 = vuzp1q_u8(f0, f1), odd01 = vuzp2q_u8(f0, f1); // bytes 0, 2 | 1, 3
  const uint8x16_t even23 = vuzp1q_u8(f2, f3), odd23 = vuzp2q_u8(f2, f3);
  return {{vuzp1q_u8(even01, even23), vuzp1q_u8(odd01, odd23), vuzp2q_u8(even01, even23), vuzp2q_u8(odd01, odd23)}};
}

/// The floats of byte planes p looked up by 16 indices (below 16): out[k] holds those of indices
/// 4k..4k+3. 4 lookups and 8 zips for 16 floats.
inline void neon_plane_lookup(const uint8x16x4_t &p, uint8x16_t indices, float32x4_t out[4]) {
  const uint8x16_t b0 = vqtbl1q_u8(p.val[0], indices), b1 = vqtbl1q_u8(p.val[1], indices);
  const uint8x16_t b2 = vqtbl1q_u8(p.val[2], indices), b3 = vqtbl1q_u8(p.val[3], indices);
  const uint16x8_t low01 = vreinterpretq_u16_u8(vzip1q_u8(b0, b1)), high01 = vreinterpretq_u16_u8(vzip2q_u8(b0, b1));
  const uint16x8_t low23 = vreinterpretq_u16_u8(vzip1q_u8(b2, b3)), high23 = vreinterpretq_u16_u8(vzip2q_u8(b2, b3));
  out[0] = vreinterpretq_f32_u16(vzip1q_u16(low01, low23));
  out[1] = vreinterpretq_f32_u16(vzip2q_u16(low01, low23));
  out[2] = vreinterpretq_f32_u16(vzip1q_u16(high01, high23));
  out[3] = vreinterpretq_f32_u16(vzip2q_u16(high01, high23));
}

/// The floats of byte planes p looked up by the low 8 of 16 indices: out[0] and out[1] hold those
/// of indices 0..3 and 4..7. 4 lookups and 4 zips for 8 floats.
inline void neon_plane_lookup8(const uint8x16x4_t &p, uint8x16_t indices, float32x4_t out[2]) {
  const uint8x16_t b0 = vqtbl1q_u8(p.val[0], indices), b1 = vqtbl1q_u8(p.val[1], indices);
  const uint8x16_t b2 = vqtbl1q_u8(p.val[2], indices), b3 = vqtbl1q_u8(p.val[3], indices);
  const uint16x8_t low01 = vreinterpretq_u16_u8(vzip1q_u8(b0, b1)), low23 = vreinterpretq_u16_u8(vzip1q_u8(b2, b3));
  out[0] = vreinterpretq_f32_u16(vzip1q_u16(low01, low23));
  out[1] = vreinterpretq_f32_u16(vzip2q_u16(low01, low23));
}

/// A codebook of up to 16 entries as byte planes (CQ2's 4 padded with zeros).
inline uint8x16x4_t neon_codebook_planes(const float *codebook, int bits) {
  float entries[16] = {};
  for (int i = 0; i < (1 << bits); ++i)
    entries[i] = codebook[i];
  const float32x4_t f[4] = {vld1q_f32(entries), vld1q_f32(entries + 4), vld1q_f32(entries + 8),
                            vld1q_f32(entries + 12)};
  return neon_byte_planes(f);
}

/// 4 fp16 norms as floats.
inline float32x4_t neon_norms4(const uint16_t *norms) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(norms))); }

/// Lane i of the result: the sum of v[i]'s 4 lanes.
inline float32x4_t neon_lane_sums4(const float32x4_t v[4]) {
  return vpaddq_f32(vpaddq_f32(v[0], v[1]), vpaddq_f32(v[2], v[3]));
}

// CQ2 on CqLut16, one token: float pair tables as byte planes.

/// A CQ2 group's pair tables: unit u's 16 entries c[k & 3]·x[2u] + c[k >> 2]·x[2u + 1] as byte
/// planes (4 KB per group).
using Cq2PairPlanesNeon = uint8x16x4_t[64];

inline void cq2_pair_planes_neon(const float *codebook, const float *x, uint8x16x4_t *planes) {
  const float32x4_t low = vld1q_f32(codebook); // c[k & 3] for k = 4m..4m+3
  for (int u = 0; u < 64; ++u) {
    const float32x4_t x0 = vmulq_n_f32(low, x[2 * u]);
    float32x4_t entries[4];
    for (int m = 0; m < 4; ++m) // entries 4m..4m+3: c[m] is their c[k >> 2]
      entries[m] = vaddq_f32(x0, vdupq_n_f32(codebook[m] * x[2 * u + 1]));
    planes[u] = neon_byte_planes(entries);
  }
}

/// One token's sums of one CqLut16 tile (16 CQ2 rows) over a block of `count` groups: per 16-byte
/// half of a chunk, 16 rows' codes of two units (the low and the high nibbles), each unit's
/// entries looked up in its planes (neon_plane_lookup: 12 operations for 32 weights) and added;
/// per group, each row's sum scaled by its norm. The two units add into separate sums, so two
/// chains of adds wait out each other's latency.
inline void cq2_exact_tile_neon(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                const Cq2PairPlanesNeon *planes, float *out) {
  const uint8x16_t nibble = vdupq_n_u8(15);
  float32x4_t rows[4];
  for (int i = 0; i < 4; ++i)
    rows[i] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(2)) {
    float32x4_t acc[2][4];
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 4; ++i)
        acc[s][i] = vdupq_n_f32(0.0f);
    for (int q = 0; q < 16; ++q)
      for (int h = 0; h < 2; ++h) { // units 4q + h (low nibbles) and 4q + 2 + h (high)
        const uint8x16_t codes = vld1q_u8(tile + 32 * q + 16 * h);
        float32x4_t entries[4];
        neon_plane_lookup(planes[g][4 * q + h], vandq_u8(codes, nibble), entries);
        for (int i = 0; i < 4; ++i)
          acc[0][i] = vaddq_f32(acc[0][i], entries[i]);
        neon_plane_lookup(planes[g][4 * q + 2 + h], vshrq_n_u8(codes, 4), entries);
        for (int i = 0; i < 4; ++i)
          acc[1][i] = vaddq_f32(acc[1][i], entries[i]);
      }
    for (int i = 0; i < 4; ++i)
      rows[i] = vfmaq_f32(rows[i], vaddq_f32(acc[0][i], acc[1][i]), neon_norms4(norms + 16 * g + 4 * i));
  }
  for (int i = 0; i < 4; ++i)
    vst1q_f32(out + 4 * i, rows[i]);
}

/// cq_matmul_lut16_exact_neon for one CQ2 token: block by block, the pair tables of the block's
/// groups (16 KB), then every tile's sums over them.
inline void cq2_exact_matvec_neon(const uint8_t *packed, const uint16_t *norms, const float *codebook, int64_t rows,
                                  int64_t groups, const float *x_rot, float *y) {
  Cq2PairPlanesNeon planes[CqLut16::block];
  cqlut_each_tile<1>(
      rows, groups, y, 0,
      [&](int64_t g0, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          cq2_pair_planes_neon(codebook, x_rot + (g0 + i) * cq_group, planes[i]);
      },
      [&](int64_t at, int64_t, int64_t count, float(*out)[CqLut16::tile]) {
        cq2_exact_tile_neon(packed + CqLut16::tile_group_bytes(2) * at, norms + CqLut16::tile * at, count, planes,
                            out[0]);
      });
}

// CQ2 on CqLut16, runs of tokens: decoded once, multiplied for each token.

/// kTokens tokens' sums of 8 rows (half `half` of a CqLut16 tile of 16 CQ2 rows) over a block of
/// `count` groups (x at the block, token j's j·stride floats on): bytes 8·half..8·half + 7 of a
/// chunk half hold 8 rows' codes of 4 columns (two units), one per 2 bits; each column's 2-bit
/// indices are looked up in the codebook's planes (neon_plane_lookup8), scaled by the rows'
/// norms once, and multiplied by each token's input (the AVX2 kernel's cq2_exact_rows8_avx2).
template <int kTokens>
inline void cq2_exact_rows8_neon(const uint8_t *tile, const uint16_t *norms, int64_t count, int half,
                                 const uint8x16x4_t &codebook, const float *x, int64_t stride,
                                 float (*out)[CqLut16::tile]) {
  const uint8x16_t two_bits = vdupq_n_u8(3);
  float32x4_t acc[kTokens][2];
  for (int j = 0; j < kTokens; ++j)
    acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(2), x += cq_group) {
    const float32x4_t norm[2] = {neon_norms4(norms + 16 * g + 8 * half), neon_norms4(norms + 16 * g + 8 * half + 4)};
    for (int q = 0; q < 16; ++q)
      for (int h = 0; h < 2; ++h) { // units 4q + h (low nibbles) and 4q + 2 + h (high)
        const uint8x16_t codes = vcombine_u8(vld1_u8(tile + 32 * q + 16 * h + 8 * half), vdup_n_u8(0));
        const uint8x16_t index[4] = {vandq_u8(codes, two_bits), vandq_u8(vshrq_n_u8(codes, 2), two_bits),
                                     vandq_u8(vshrq_n_u8(codes, 4), two_bits), vshrq_n_u8(codes, 6)};
        for (int s = 0; s < 4; ++s) { // columns 8q + 2h + s (s < 2) and 8q + 4 + 2h + s - 2
          float32x4_t w[2];
          neon_plane_lookup8(codebook, index[s], w);
          w[0] = vmulq_f32(w[0], norm[0]);
          w[1] = vmulq_f32(w[1], norm[1]);
          const float *column = x + 8 * q + 2 * h + (s < 2 ? s : s + 2);
          for (int j = 0; j < kTokens; ++j) {
            const float32x4_t input = vld1q_dup_f32(column + j * stride);
            acc[j][0] = vfmaq_f32(acc[j][0], w[0], input);
            acc[j][1] = vfmaq_f32(acc[j][1], w[1], input);
          }
        }
      }
  }
  for (int j = 0; j < kTokens; ++j) {
    vst1q_f32(out[j] + 8 * half, acc[j][0]);
    vst1q_f32(out[j] + 8 * half + 4, acc[j][1]);
  }
}

// CQ4 on CqLut16: a unit is one column, so a chunk half's nibbles decode 16 rows of two columns.

/// Adds 16 rows' weights of one column (w, rows 4i..4i+3 in w[i]) times the column's input, lane
/// kLane of `x`, into acc.
template <int kLane> inline void neon_column_fma(float32x4_t acc[4], const float32x4_t w[4], float32x4_t x) {
  for (int i = 0; i < 4; ++i)
    acc[i] = vfmaq_laneq_f32(acc[i], w[i], x, kLane);
}

/// One token's sums of one CqLut16 tile (16 CQ4 rows) over a block of `count` groups: per 16-byte
/// half h of chunk q, the low nibbles hold column 4q + h and the high ones column 4q + 2 + h, each
/// decoded in the codebook's planes (12 operations for 16 weights) and multiplied by its input;
/// per group, each row's sum scaled by its norm. The two columns add into separate sums.
inline void cq4_exact_tile_neon(const uint8_t *tile, const uint16_t *norms, int64_t count, const uint8x16x4_t &codebook,
                                const float *x, float *out) {
  const uint8x16_t nibble = vdupq_n_u8(15);
  float32x4_t rows[4];
  for (int i = 0; i < 4; ++i)
    rows[i] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(4), x += cq_group) {
    float32x4_t acc[2][4];
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 4; ++i)
        acc[s][i] = vdupq_n_f32(0.0f);
    for (int q = 0; q < 32; ++q) {
      const float32x4_t inputs = vld1q_f32(x + 4 * q);
      const uint8x16_t even = vld1q_u8(tile + 32 * q), odd = vld1q_u8(tile + 32 * q + 16);
      float32x4_t w[4];
      neon_plane_lookup(codebook, vandq_u8(even, nibble), w);
      neon_column_fma<0>(acc[0], w, inputs);
      neon_plane_lookup(codebook, vshrq_n_u8(even, 4), w);
      neon_column_fma<2>(acc[1], w, inputs);
      neon_plane_lookup(codebook, vandq_u8(odd, nibble), w);
      neon_column_fma<1>(acc[0], w, inputs);
      neon_plane_lookup(codebook, vshrq_n_u8(odd, 4), w);
      neon_column_fma<3>(acc[1], w, inputs);
    }
    for (int i = 0; i < 4; ++i)
      rows[i] = vfmaq_f32(rows[i], vaddq_f32(acc[0][i], acc[1][i]), neon_norms4(norms + 16 * g + 4 * i));
  }
  for (int i = 0; i < 4; ++i)
    vst1q_f32(out + 4 * i, rows[i]);
}

/// Adds 16 rows' weights of one column (w, already scaled by the rows' norms) times its input,
/// lane kLane of inputs[j], into kTokens tokens' sums.
template <int kTokens, int kLane>
inline void neon_column_fma_tokens(float32x4_t (*acc)[4], const float32x4_t w[4], const float32x4_t *inputs) {
  for (int j = 0; j < kTokens; ++j)
    neon_column_fma<kLane>(acc[j], w, inputs[j]);
}

/// kTokens tokens' sums of one CqLut16 tile (16 CQ4 rows) over a block of `count` groups (x at
/// the block, token j's j·stride floats on): each column decoded once, scaled by the rows' norms
/// and multiplied by every token's input.
template <int kTokens>
inline void cq4_exact_tile_tokens_neon(const uint8_t *tile, const uint16_t *norms, int64_t count,
                                       const uint8x16x4_t &codebook, const float *x, int64_t stride,
                                       float (*out)[CqLut16::tile]) {
  const uint8x16_t nibble = vdupq_n_u8(15);
  float32x4_t acc[kTokens][4];
  for (int j = 0; j < kTokens; ++j)
    for (int i = 0; i < 4; ++i)
      acc[j][i] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < count; ++g, tile += CqLut16::tile_group_bytes(4), x += cq_group) {
    float32x4_t norm[4];
    for (int i = 0; i < 4; ++i)
      norm[i] = neon_norms4(norms + 16 * g + 4 * i);
    const auto scaled = [&](uint8x16_t indices, float32x4_t w[4]) {
      neon_plane_lookup(codebook, indices, w);
      for (int i = 0; i < 4; ++i)
        w[i] = vmulq_f32(w[i], norm[i]);
    };
    for (int q = 0; q < 32; ++q) {
      float32x4_t inputs[kTokens];
      for (int j = 0; j < kTokens; ++j)
        inputs[j] = vld1q_f32(x + j * stride + 4 * q);
      const uint8x16_t even = vld1q_u8(tile + 32 * q), odd = vld1q_u8(tile + 32 * q + 16);
      float32x4_t w[4];
      scaled(vandq_u8(even, nibble), w);
      neon_column_fma_tokens<kTokens, 0>(acc, w, inputs);
      scaled(vandq_u8(odd, nibble), w);
      neon_column_fma_tokens<kTokens, 1>(acc, w, inputs);
      scaled(vshrq_n_u8(even, 4), w);
      neon_column_fma_tokens<kTokens, 2>(acc, w, inputs);
      scaled(vshrq_n_u8(odd, 4), w);
      neon_column_fma_tokens<kTokens, 3>(acc, w, inputs);
    }
  }
  for (int j = 0; j < kTokens; ++j)
    for (int i = 0; i < 4; ++i)
      vst1q_f32(out[j] + 4 * i, acc[j][i]);
}

/// cq_matmul_lut16_exact_neon for kTokens tokens of a CQ2 or CQ4 matrix (token j's x_rot and y
/// j·stride floats after token 0's), each column decoded once for all of them: CQ2 8 rows at a
/// time (cq2_exact_rows8_neon), CQ4 a tile's 16 (one token alone on cq4_exact_tile_neon).
template <int kBits, int kTokens>
inline void cqlut_exact_tokens_neon(const uint8_t *packed, const uint16_t *norms, const float *codebook, int64_t rows,
                                    int64_t groups, const float *x_rot, float *y, int64_t stride) {
  const uint8x16x4_t planes = neon_codebook_planes(codebook, kBits);
  cqlut_each_tile<kTokens>(
      rows, groups, y, stride, [](int64_t, int64_t) {},
      [&](int64_t at, int64_t g0, int64_t count, float(*out)[CqLut16::tile]) {
        const uint8_t *tile = packed + CqLut16::tile_group_bytes(kBits) * at;
        const uint16_t *tile_norms = norms + CqLut16::tile * at;
        const float *x = x_rot + g0 * cq_group;
        if constexpr (kBits == 2) {
          for (int half = 0; half < 2; ++half)
            cq2_exact_rows8_neon<kTokens>(tile, tile_norms, count, half, planes, x, stride, out);
        } else if constexpr (kTokens == 1) {
          cq4_exact_tile_neon(tile, tile_norms, count, planes, x, out[0]);
        } else {
          cq4_exact_tile_tokens_neon<kTokens>(tile, tile_norms, count, planes, x, stride, out);
        }
      });
}

/// cq_matmul_lut16_exact with NEON. CQ2: runs of 8 tokens decoded and multiplied (16 sums, two
/// decoded columns and the codebook's planes fit the 32 registers), the rest one at a time on the
/// pair tables: counted under qemu on 256 x 1024, a token alone executes 0.72 instructions a weight,
/// a run of 2 1.13 a token, of 4 0.85 and of 8 0.68, so only runs of 8 pay for decoding. CQ4: 16
/// rows of a column decoded at once, for a token alone or runs of 4 (16 sums; 1.18, 0.92 a token
/// for 2, 0.68 for 4).
inline void cq_matmul_lut16_exact_neon(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                                       int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride,
                                       int64_t n) {
  const int64_t groups = cq_groups(cols);
  if (bits == 4) {
    token_runs<4>(n, [&](auto tokens, int64_t j) {
      cqlut_exact_tokens_neon<4, tokens>(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride,
                                         stride);
    });
    return;
  }
  runs_then_singles<8>(
      n,
      [&](int64_t j) {
        cqlut_exact_tokens_neon<2, 8>(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride,
                                      stride);
      },
      [&](int64_t j) {
        cq2_exact_matvec_neon(packed, norms, codebook, rows, groups, x_rot + j * stride, y + j * stride);
      });
}

// CQ4 on CqX8: the codebook's byte planes decode 32 columns at a time.

/// Columns 32q..32q+31 of a CQ4 group (vector q/2, nibble q%2), decoded: out[k] holds columns
/// 32q + 8k..32q + 8k + 3 and out[4 + k] columns 32q + 8k + 4..32q + 8k + 7 (CqX8 stores a
/// vector's columns in the order in which AVX2 decodes them per 128-bit half, as NEON does).
inline void cq4x8_decode_quarter_neon(const uint8x16x4_t &planes, const uint8_t *group, int q, float32x4_t out[8]) {
  const uint8_t *vector = group + 32 * (q / 2);
  const uint8x16_t low = vld1q_u8(vector), high = vld1q_u8(vector + 16);
  const uint8x16_t nibble = vdupq_n_u8(15);
  float32x4_t first[4], second[4];
  neon_plane_lookup(planes, q % 2 ? vshrq_n_u8(low, 4) : vandq_u8(low, nibble), first);
  neon_plane_lookup(planes, q % 2 ? vshrq_n_u8(high, 4) : vandq_u8(high, nibble), second);
  for (int k = 0; k < 4; ++k) {
    out[k] = first[k];
    out[4 + k] = second[k];
  }
}

/// One CQ4 row's Σ over a block of `count` groups for one token (x at the block), as 4 partial
/// sums: per group 8 chains of FMAs, added and scaled by the group's norm at its end.
inline float32x4_t cqx8_row_block_neon(const uint8_t *row, const uint16_t *norms, int64_t count,
                                       const uint8x16x4_t &planes, const float *x) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < count; ++g, x += cq_group) {
    float32x4_t s[8];
    for (int i = 0; i < 8; ++i)
      s[i] = vdupq_n_f32(0.0f);
    for (int q = 0; q < 4; ++q) {
      float32x4_t w[8];
      cq4x8_decode_quarter_neon(planes, row + CqX8::group_bytes * g, q, w);
      for (int k = 0; k < 4; ++k) {
        s[k] = vfmaq_f32(s[k], w[k], vld1q_f32(x + 32 * q + 8 * k));
        s[4 + k] = vfmaq_f32(s[4 + k], w[4 + k], vld1q_f32(x + 32 * q + 8 * k + 4));
      }
    }
    const float32x4_t sum = vaddq_f32(vaddq_f32(vaddq_f32(s[0], s[1]), vaddq_f32(s[2], s[3])),
                                      vaddq_f32(vaddq_f32(s[4], s[5]), vaddq_f32(s[6], s[7])));
    acc = vfmaq_n_f32(acc, sum, half_to_float(norms[g]));
  }
  return acc;
}

/// The NEON row kernel of cqx8_matvec_on: rows by cqx8_row_block_neon.
struct Cq4RowsNeon {
  uint8x16x4_t planes;
  const float *x = nullptr;
  void at_block(const float *block_x, int64_t) { x = block_x; }
  void rows8(const uint8_t *row, const uint16_t *norms, int64_t count, float *y) const {
    for (int half = 0; half < 2; ++half) {
      float32x4_t sums[4];
      for (int i = 0; i < 4; ++i) {
        const int64_t r = 4 * half + i;
        sums[i] = cqx8_row_block_neon(row + CqX8::group_bytes * count * r, norms + count * r, count, planes, x);
      }
      vst1q_f32(y + 4 * half, vaddq_f32(vld1q_f32(y + 4 * half), neon_lane_sums4(sums)));
    }
  }
  float row(const uint8_t *row, const uint16_t *norms, int64_t count) const {
    return vaddvq_f32(cqx8_row_block_neon(row, norms, count, planes, x));
  }
};

/// One CQ4 row's Σ over a block of `count` groups, added to y[j·stride] for kTokens tokens (x at
/// the block, token j's j·stride floats on): each 32 columns are decoded once for all the tokens
/// and scaled by their group's norm.
template <int kTokens>
inline void cq4x8_block_tokens_neon(const uint8_t *row, const uint16_t *norms, int64_t count,
                                    const uint8x16x4_t &planes, const float *x, int64_t stride, float *y) {
  float32x4_t s[kTokens][2];
  for (int j = 0; j < kTokens; ++j)
    s[j][0] = s[j][1] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < count; ++g) {
    const float norm = half_to_float(norms[g]);
    for (int q = 0; q < 4; ++q) {
      float32x4_t w[8];
      cq4x8_decode_quarter_neon(planes, row + CqX8::group_bytes * g, q, w);
      for (int k = 0; k < 8; ++k) { // columns 32q + 8(k % 4) + 4(k / 4)..
        const float32x4_t weights = vmulq_n_f32(w[k], norm);
        const float *xk = x + cq_group * g + 32 * q + 8 * (k % 4) + 4 * (k / 4);
        for (int j = 0; j < kTokens; ++j)
          s[j][k / 4] = vfmaq_f32(s[j][k / 4], weights, vld1q_f32(xk + j * stride));
      }
    }
  }
  for (int j = 0; j < kTokens; ++j)
    y[j * stride] += vaddvq_f32(vaddq_f32(s[j][0], s[j][1]));
}

/// kTokens tokens' y (token j's j·stride floats after token 0's), block by block: the tokens'
/// inputs in a block (8 KB for 4) stay in L1 while every row passes over them.
template <int kTokens>
inline void cqx8_tokens_neon(const uint8_t *packed, const uint16_t *norms, const uint8x16x4_t &planes, int64_t rows,
                             int64_t groups, const float *x_rot, float *y, int64_t stride) {
  for (int64_t j = 0; j < kTokens; ++j)
    for (int64_t r = 0; r < rows; ++r)
      y[j * stride + r] = 0.0f;
  for (int64_t g = 0; g < groups; g += CqX8::block) {
    const int64_t count = cq_block_count(groups, g, CqX8::block);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = g * rows + count * r;
      cq4x8_block_tokens_neon<kTokens>(packed + CqX8::group_bytes * at, norms + at, count, planes, x_rot + g * cq_group,
                                       stride, y + r);
    }
  }
}

/// cq_matmul_x8_exact with NEON (bits 4): a token alone row by row, runs of 4 tokens (then one of
/// 2 as needed) decoded once for all.
inline void cq_matmul_x8_exact_neon(const uint8_t *packed, const uint16_t *norms, const float *codebook, int /*bits*/,
                                    int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride,
                                    int64_t n) {
  const uint8x16x4_t planes = neon_codebook_planes(codebook, 4);
  const int64_t groups = cq_groups(cols);
  token_runs<4>(n, [&](auto tokens, int64_t j) {
    if constexpr (tokens == 1) {
      Cq4RowsNeon kernel{planes};
      cqx8_matvec_on(kernel, packed, norms, rows, groups, x_rot + j * stride, y + j * stride);
    } else {
      cqx8_tokens_neon<tokens>(packed, norms, planes, rows, groups, x_rot + j * stride, y + j * stride, stride);
    }
  });
}

} // namespace needle_rt
#endif
