// needle_rt, scalars and small vector helpers.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Scalars and small vector helpers
// ---------------------------------------------------------------------------------------------

/// IEEE binary16 -> f32, exact for every input (subnormals, infinities, NaN payloads).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  } else {
    // Rebias the exponent from 15 to 127.
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Asks for the cache lines holding bytes [p, p + bytes) ahead of their use, a 64-byte line at a
/// time from the one p lies in (GCC and Clang; a no-op elsewhere). A prefetch never faults.
inline void prefetch_bytes(const void *p, int64_t bytes) {
#if defined(__GNUC__)
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + static_cast<uintptr_t>(bytes);
  for (uintptr_t line = begin & ~uintptr_t{63}; line < end; line += 64)
    __builtin_prefetch(reinterpret_cast<const void *>(line));
#else
  (void)p, (void)bytes;
#endif
}

/// σ(x) = 1 / (1 + e^-x). e^-x overflowing to +inf gives exactly 0, as it should.
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

/// Σ a[i] b[i]. With GCC and Clang, 16 partial sums as four 4-float vectors: four independent
/// chains of vector FMAs (one chain waits out each FMA's latency), summed pairwise at the end.
/// Otherwise four f32 accumulators.
inline float dot(const float *a, const float *b, int64_t n) {
  int64_t i = 0;
  float tail = 0.0f;
#if defined(__GNUC__)
  typedef float f32x4 __attribute__((vector_size(16)));
  f32x4 s[4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  for (; i + 16 <= n; i += 16)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      f32x4 x, y;
      std::memcpy(&x, a + i + 4 * k, sizeof x);
      std::memcpy(&y, b + i + 4 * k, sizeof y);
      s[k] += x * y;
    }
  const f32x4 sum = (s[0] + s[1]) + (s[2] + s[3]);
  tail = (sum[0] + sum[1]) + (sum[2] + sum[3]);
#endif
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i)
    s0 += a[i] * b[i];
  return tail + ((s0 + s1) + (s2 + s3));
}

/// 1 / sqrt(mean(x²) + eps): the factor of unit(x) = x / sqrt(mean(x²) + eps).
inline float rms_inverse(const float *x, int64_t n, float eps) {
  return 1.0f / std::sqrt(dot(x, x, n) / static_cast<float>(n) + eps);
}

/// out = x * factor (needle.scale; the embedding's sqrt(D)). out may equal x.
inline void scale(const float *x, int64_t n, float factor, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * factor;
}

} // namespace needle_rt
