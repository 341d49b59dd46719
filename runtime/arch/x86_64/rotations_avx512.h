// needle_rt, the Hadamard rotations with AVX-512F.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

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

} // namespace needle_rt
#endif
