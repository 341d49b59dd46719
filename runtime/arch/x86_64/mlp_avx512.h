// needle_rt, the Kronecker MLP with AVX-512F.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

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

} // namespace needle_rt
#endif
