// needle_rt, norms and RoPE.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Norms and RoPE
// ---------------------------------------------------------------------------------------------

/// unit(x) = x / sqrt(mean(x²) + eps) over n values. out may equal x.
inline void unit_norm(const float *x, int64_t n, float eps, float *out) {
  const float inverse = rms_inverse(x, n, eps);
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * inverse;
}

/// needle.zc_norm: x [n_total] is `heads` heads of d = n_total / heads; each head becomes
/// (1 + scale) ⊙ unit(head), scale [d] shared by all heads (heads = 1: the whole vector).
/// scale may be null (plain unit). out may equal x.
inline void zc_norm(const float *x, const float *scale, int64_t n_total, int64_t heads, float eps, float *out) {
  const int64_t d = n_total / heads;
  for (int64_t h = 0; h < heads; ++h) {
    const float *xh = x + h * d;
    float *oh = out + h * d;
    const float inverse = rms_inverse(xh, d, eps);
    for (int64_t i = 0; i < d; ++i)
      oh[i] = xh[i] * inverse * (scale ? 1.0f + scale[i] : 1.0f);
  }
}

/// needle.rope, rotate-half, in place on x [heads][d] (d even) at position t: pair (f, f + d/2)
/// turns by t·theta^(-2f/d). The angle, cos and sin are formed in double and rounded to f32 as
/// reference::rope does (model.md's choice; the frequency here within f ulps of its pow), once per
/// f and shared by all heads.
inline void rope(float *x, int64_t heads, int64_t d, int64_t t, double theta) {
  const int64_t half = d / 2;
  // theta^(-2f/d) by products of theta^(-2/d), in double: off from pow's by f ulps, and one pow per
  // call instead of half of d.
  const double ratio = std::pow(theta, -2.0 / static_cast<double>(d));
  double frequency = 1.0;
  for (int64_t f = 0; f < half; ++f, frequency *= ratio) {
    const double angle = static_cast<double>(t) * frequency;
    const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
    for (int64_t h = 0; h < heads; ++h) {
      float *head = x + h * d;
      const float a = head[f], b = head[f + half];
      head[f] = a * c - b * s;
      head[f + half] = b * c + a * s;
    }
  }
}

} // namespace needle_rt
