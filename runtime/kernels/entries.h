// needle_rt, flat entry points: the printers' calls where an op's kernel takes a struct, a condition or a value behind
// a pointer. A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Flat entry points: where an op's kernel takes a struct, a condition or a value behind a
// pointer, these take only pointers and scalars, so the C++ and the object printers call every
// kernel of @step the same way (codegen/Lower/KernelProgram.h).
// ---------------------------------------------------------------------------------------------

/// head_pool_add for a position whose token is not the head's pad token.
inline void head_pool_add_unless_pad(int32_t token, int64_t pad, float *state, int64_t rows, int64_t probes, int64_t d,
                                     const float *const *cells, const float *const *probe_rows) {
  if (token != pad)
    head_pool_add(state, rows, probes, d, cells, probe_rows);
}

/// out[0] = head_confidence(..., bias[0], ...).
inline void head_confidence_into(const float *pooled, const float *proj, const float *bias, int64_t width, float *out) {
  out[0] = head_confidence(pooled, proj, bias[0], width);
}

/// residual_gate with its gate read from gate[0].
inline void residual_gate_from(const float *x, const float *a, const float *norm, const float *gate, int64_t n,
                               float eps, float *out) {
  residual_gate(x, a, norm, gate[0], n, eps, out);
}

/// out = RoPE(in) at position t; out may equal in.
inline void rope_into(const float *in, float *out, int64_t heads, int64_t d, int64_t t, double theta) {
  if (out != in)
    std::memmove(out, in, static_cast<size_t>(heads * d) * sizeof(float));
  rope(out, heads, d, t, theta);
}

/// kMlp (kron_mlp_native, kron_mlp_avx2, kron_mlp_avx512) with its weights as arguments, in
/// KronMlp's field order.
template <void (*kMlp)(const KronMlp &, const float *, float, float *, float *)>
inline void kron_mlp_flat_on(int64_t d_model, int64_t n, int64_t ba, int64_t bb, const float *norm, const float *w1a,
                             const float *w2a, const float *w3a, const float *w1b, const float *w2b, const float *w3b,
                             const float *d1, const float *d2, const float *b2, const float *d3, const float *d4,
                             const float *cond_v, const float *cond_u, const int32_t *p1, const int32_t *p2,
                             const float *x1, float eps, float *scratch, float *out) {
  kMlp({d_model, n, ba, bb, norm, w1a, w2a, w3a, w1b, w2b, w3b, d1, d2, b2, d3, d4, cond_v, cond_u, p1, p2}, x1, eps,
       scratch, out);
}

/// The C++ printer's call.
inline constexpr auto &kron_mlp_flat = kron_mlp_flat_on<kron_mlp_native>;
#if NEEDLE_RT_X86_KERNELS
/// The object's calls on x86-64 with AVX2, FMA and F16C, and with AVX-512F as well.
inline constexpr auto &kron_mlp_flat_avx2 = kron_mlp_flat_on<kron_mlp_avx2>;
inline constexpr auto &kron_mlp_flat_avx512 = kron_mlp_flat_on<kron_mlp_avx512>;
#endif

} // namespace needle_rt
