// needle_rt, the sigmoid gate and the Kronecker MLP with AVX2.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

/// sigmoid_gate 8 at a time (avx2_sigmoid), the rest in plain C++. (A tail loop of its own here
/// made GCC 12 warn, wrongly, of an overflowing iteration wherever n was a multiple of 8.)
NEEDLE_RT_AVX2 inline void sigmoid_gate_avx2(const float *x, const float *gate, int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), avx2_sigmoid(_mm256_loadu_ps(gate + i))));
  sigmoid_gate_portable(x + i, gate + i, n - i, out + i);
}

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

} // namespace needle_rt
#endif
