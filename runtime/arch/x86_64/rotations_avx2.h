// needle_rt, the Hadamard rotations with AVX2.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

#if NEEDLE_RT_X86_KERNELS
namespace needle_rt {

/// fwht's butterflies between lanes kHalf (1, 2 or 4) apart inside each 8-float vector: the lower
/// lane of each pair takes a + b, the upper a − b, from the pair's lanes swapped into t.
template <int kHalf> NEEDLE_RT_AVX2 inline __m256 avx2_butterflies(__m256 x) {
  const __m256 t = kHalf == 1   ? _mm256_permute_ps(x, 0xB1) // 1 0 3 2
                   : kHalf == 2 ? _mm256_permute_ps(x, 0x4E) // 2 3 0 1
                                : _mm256_permute2f128_ps(x, x, 1);
  constexpr int upper = kHalf == 1 ? 0xAA : kHalf == 2 ? 0xCC : 0xF0;
  return _mm256_blend_ps(_mm256_add_ps(x, t), _mm256_sub_ps(t, x), upper);
}

/// fwht with AVX2 for n a multiple of 8: the same butterflies in the same stage order and one
/// scale, so bit-identical to it (and to cq::fwht). The stages within a vector first, then those
/// between vectors, each a pass over x (a group of 128 stays in L1).
NEEDLE_RT_AVX2 inline void fwht_avx2(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(x + i, avx2_butterflies<4>(avx2_butterflies<2>(avx2_butterflies<1>(_mm256_loadu_ps(x + i)))));
  for (int64_t half = 8; half < n; half *= 2)
    for (int64_t block = 0; block < n; block += 2 * half)
      for (int64_t i = block; i < block + half; i += 8) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + half);
        _mm256_storeu_ps(x + i, _mm256_add_ps(a, b));
        _mm256_storeu_ps(x + i + half, _mm256_sub_ps(a, b));
      }
  const __m256 s = _mm256_set1_ps(static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))));
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
}

/// hadamard with AVX2 (fwht_avx2 where the group fills whole vectors, else hadamard_portable).
NEEDLE_RT_AVX2 inline void hadamard_avx2(const float *in, int64_t n, int64_t group, float *out) {
  if (group % 8 != 0)
    return hadamard_portable(in, n, group, out);
  const int64_t padded = hadamard_pad(in, n, group, out);
  for (int64_t g = 0; g < padded; g += group)
    fwht_avx2(out + g, group);
}

} // namespace needle_rt
#endif
