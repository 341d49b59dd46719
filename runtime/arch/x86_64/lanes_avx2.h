// needle_rt, the lanes' Sinkhorn and gates with AVX2.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

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

/// mhc_gates with sinkhorn4_avx2.
NEEDLE_RT_AVX2 inline void mhc_gates_avx2(const float *pre, const float *post, const float *res, const float *a,
                                          const float *b_pre, const float *b_post, const float *b_res, int64_t position,
                                          float *h_pre, float *h_post, float *mix) {
  mhc_gates_with(pre, post, res, a, b_pre, b_post, b_res, position, h_pre, h_post, mix, sinkhorn4_avx2);
}

} // namespace needle_rt
#endif
