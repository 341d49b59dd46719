// needle_rt, exp, log and the sigmoid with AVX2 (Cephes' expf).
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

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

} // namespace needle_rt
#endif
