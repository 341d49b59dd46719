// needle_rt, the kernels the compiler targets: one #if per op over NEEDLE_RT_TARGETS_* (isa.h), which the C++ backend
// calls. A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

/// needle.hadamard: out [round_up(n, group)] = `in` padded with zeros, then H per group (group a
/// power of two), bit-identical to cq::fwht on each. out may equal in when that buffer holds the
/// padded length.
inline void hadamard(const float *in, int64_t n, int64_t group, float *out) {
#if NEEDLE_RT_TARGETS_AVX512
  hadamard_avx512(in, n, group, out);
#elif NEEDLE_RT_TARGETS_AVX2
  hadamard_avx2(in, n, group, out);
#else
  hadamard_portable(in, n, group, out);
#endif
}

/// needle.cq_matmul for n tokens on a CQ4 matrix in the CqX8 layout (the exact mode): AVX-512 or
/// AVX2 where the compiler targets it, NEON on aarch64, else plain C++.
inline void cq_matmul_x8_exact(const uint8_t *packed, const uint16_t *norms, const float *codebook,
                               [[maybe_unused]] int bits, int64_t rows, int64_t cols, const float *x_rot, float *y,
                               int64_t stride, int64_t n) {
#if NEEDLE_RT_TARGETS_AVX512
  cq_matmul_x8_exact_avx512(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_TARGETS_AVX2
  cq_matmul_x8_exact_avx2(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_NEON_KERNELS
  cq_matmul_x8_exact_neon(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#else
  cq_matmul_in(CqX8Rows{}, packed, norms, codebook, rows, cols, x_rot, y, stride, n);
#endif
}

/// The exact mode's needle.cq_matmul for n tokens on a CQ2 or CQ4 matrix in the CqLut16 layout
/// (needlec lays only CQ2 so): AVX-512 or AVX2 where the compiler targets it, NEON on aarch64,
/// else cqlut_exact_matmul_portable.
inline void cq_matmul_lut16_exact(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                                  int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
#if NEEDLE_RT_TARGETS_AVX512
  cq_matmul_lut16_exact_avx512(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_TARGETS_AVX2
  cq_matmul_lut16_exact_avx2(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_NEON_KERNELS
  cq_matmul_lut16_exact_neon(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#else
  cqlut_exact_matmul_portable(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#endif
}

/// The fast mode's needle.cq_matmul for n tokens on a CQ2 or CQ4 matrix in the CqLut16 layout:
/// AVX2 or simd128 where the compiler targets it, NEON on aarch64, else cqlut_matmul_portable.
inline void cq_matmul_lut16_fast(const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                                 int64_t rows, int64_t cols, const float *x_rot, float *y, int64_t stride, int64_t n) {
#if NEEDLE_RT_TARGETS_AVX2
  cq_matmul_lut16_fast_avx2(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_NEON_KERNELS
  cqlut_matmul_on<CqLutNeon>(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#elif NEEDLE_RT_TARGETS_SIMD128
  cq_matmul_lut16_fast_simd128(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#else
  cqlut_matmul_portable(packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
#endif
}

/// needle.mhc_gates (mhc_gates_with), its Sinkhorn with AVX2 where the build has it.
inline void mhc_gates(const float *pre, const float *post, const float *res, const float *a, const float *b_pre,
                      const float *b_post, const float *b_res, int64_t position, float *h_pre, float *h_post,
                      float *mix) {
#if NEEDLE_RT_TARGETS_AVX2
  mhc_gates_avx2(pre, post, res, a, b_pre, b_post, b_res, position, h_pre, h_post, mix);
#else
  mhc_gates_with(pre, post, res, a, b_pre, b_post, b_res, position, h_pre, h_post, mix, sinkhorn4);
#endif
}

inline void attention(const float *q, const float *k, const float *v, int64_t heads, int64_t kv_heads, int64_t dqk,
                      int64_t dv, int64_t window, int64_t capacity, int64_t t, float *k_cache, float *v_cache,
                      float *scores, float *out) {
#if NEEDLE_RT_TARGETS_AVX512
  attention_avx512(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
#elif NEEDLE_RT_TARGETS_AVX2
  attention_avx2(q, k, v, heads, kv_heads, dqk, dv, window, capacity, t, k_cache, v_cache, scores, out);
#else
  const AttentionSpan span =
      attention_store(k, v, kv_heads * dqk, kv_heads * dv, window, capacity, t, k_cache, v_cache);
  attention_read(q, heads, kv_heads, dqk, dv, capacity, span, k_cache, v_cache, scores, out);
#endif
}

/// needle.sigmoid_gate: out = x ⊙ σ(gate). out may equal x or gate.
inline void sigmoid_gate(const float *x, const float *gate, int64_t n, float *out) {
#if NEEDLE_RT_TARGETS_AVX2
  sigmoid_gate_avx2(x, gate, n, out);
#else
  sigmoid_gate_portable(x, gate, n, out);
#endif
}

/// kron_mlp on the kernels the compiler targets: AVX-512 or AVX2 behind #ifs, else portable.
inline void kron_mlp_native(const KronMlp &w, const float *x1, float eps, float *scratch, float *out) {
#if NEEDLE_RT_TARGETS_AVX512
  kron_mlp_avx512(w, x1, eps, scratch, out);
#elif NEEDLE_RT_TARGETS_AVX2
  kron_mlp_avx2(w, x1, eps, scratch, out);
#else
  kron_mlp(w, x1, eps, scratch, out);
#endif
}

} // namespace needle_rt
