// needle_rt, after attention: gates, the block update, the Kronecker MLP.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// After attention
// ---------------------------------------------------------------------------------------------

/// sigmoid_gate in plain C++.
inline void sigmoid_gate_portable(const float *x, const float *gate, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * sigmoid(gate[i]);
}

/// needle.residual_gate: out = x + σ(gate) · zc(a; norm), with gate the block's scalar
/// attn_gate. The rms of a is taken first, so out may equal x or a.
inline void residual_gate(const float *x, const float *a, const float *norm, float gate, int64_t n, float eps,
                          float *out) {
  const float g = sigmoid(gate), inverse = rms_inverse(a, n, eps);
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] + g * (a[i] * inverse * (1.0f + norm[i]));
}

/// needle.block_update: out = x1 + mlp − u, the update the lanes receive. out may equal any input.
inline void block_update(const float *x1, const float *mlp, const float *u, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x1[i] + mlp[i] - u[i];
}

/// The weights of one block's Kronecker MLP (docs/model.md "MLP"). n = ba·bb >= d_model.
struct KronMlp {
  int64_t d_model, n, ba, bb;
  const float *norm;                   // [d_model], mlp_norm
  const float *w1a, *w2a, *w3a;        // [ba][ba]
  const float *w1b, *w2b, *w3b;        // [bb][bb]
  const float *d1, *d2, *b2, *d3, *d4; // [n]
  const float *cond_v;                 // [d_model][8]
  const float *cond_u;                 // [8][n]
  const int32_t *p1, *p2;              // [n], gathers z'[i] = z[p[i]]
};

/// K(z) = waᵀ Z wb, Z = z as [ba][bb] row-major: first T = Z wb into tmp, then out = waᵀ T, both
/// as row axpys (contiguous inner loops). z, tmp [ba·bb]; out [ba·bb] may equal z, not tmp.
inline void kronecker(const float *z, const float *wa, const float *wb, int64_t ba, int64_t bb, float *tmp,
                      float *out) {
  for (int64_t a = 0; a < ba; ++a) {
    float *t = tmp + a * bb;
    for (int64_t c = 0; c < bb; ++c)
      t[c] = 0.0f;
    for (int64_t b = 0; b < bb; ++b) {
      const float zab = z[a * bb + b];
      const float *w = wb + b * bb;
      for (int64_t c = 0; c < bb; ++c)
        t[c] += zab * w[c];
    }
  }
  for (int64_t r = 0; r < ba; ++r) {
    float *o = out + r * bb;
    for (int64_t c = 0; c < bb; ++c)
      o[c] = 0.0f;
    for (int64_t a = 0; a < ba; ++a) {
      const float war = wa[a * ba + r];
      const float *t = tmp + a * bb;
      for (int64_t c = 0; c < bb; ++c)
        o[c] += war * t[c];
    }
  }
}

/// kron_mlp's first part: m = zc(x1; norm) padded to n into z, and cond (n floats each).
inline void kron_mlp_condition(const KronMlp &w, const float *x1, float eps, float *cond, float *z) {
  const int64_t D = w.d_model, n = w.n;
  float *a = z;
  zc_norm(x1, w.norm, D, 1, eps, a);
  for (int64_t i = D; i < n; ++i)
    a[i] = 0.0f;
  // mix = softmax over 8 of cond_vᵀ m (cond_v is [D][8]: row i scales m[i]), in 4 partial sums: one
  // chain of D FMAs per column was this MLP's latency.
  float mix[8];
  rows8_dots<4>(reinterpret_cast<const float(*)[8]>(w.cond_v), a, D, mix);
  float top = mix[0], sum = 0.0f;
  for (int j = 1; j < 8; ++j)
    top = mix[j] > top ? mix[j] : top;
  for (int j = 0; j < 8; ++j)
    sum += mix[j] = std::exp(mix[j] - top);
  for (int j = 0; j < 8; ++j)
    mix[j] /= sum;
  for (int64_t i = 0; i < n; ++i) { // one pass: cond_u's rows are read side by side
    float c = 1.0f;
    for (int j = 0; j < 8; ++j)
      c += mix[j] * w.cond_u[j * n + i];
    cond[i] = c;
  }
}

/// x[i] ← x[i]·σ(x[i]) (silu), in place.
inline void silu_in_place(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] *= sigmoid(x[i]);
}

/// kron_mlp with its Kronecker product (kronecker's signature) and its silu pass (silu_in_place's)
/// as given, so the portable and the AVX2 MLP are one sequence.
template <typename Kronecker, typename Silu>
inline void kron_mlp_with(const KronMlp &w, const float *x1, float eps, float *scratch, float *out, Kronecker kron,
                          Silu silu) {
  const int64_t D = w.d_model, n = w.n;
  float *cond = scratch, *a = scratch + n, *b = scratch + 2 * n;
  kron_mlp_condition(w, x1, eps, cond, a);
  // a -> K_1 -> gather p1 into b -> silu -> K_2 -> gather p2 into a -> K_3.
  for (int64_t i = 0; i < n; ++i)
    a[i] *= w.d1[i];
  kron(a, w.w1a, w.w1b, w.ba, w.bb, b, a);
  for (int64_t i = 0; i < n; ++i)
    b[i] = w.d2[i] * cond[i] * a[w.p1[i]] + w.b2[i];
  silu(b, n);
  kron(b, w.w2a, w.w2b, w.ba, w.bb, a, b);
  for (int64_t i = 0; i < n; ++i)
    a[i] = b[w.p2[i]] * w.d3[i];
  kron(a, w.w3a, w.w3b, w.ba, w.bb, b, a);
  for (int64_t i = 0; i < D; ++i)
    out[i] = w.d4[i] * a[i];
}

/// needle.kron_mlp on x1 [d_model] into out [d_model], reference::kronMlp's steps (its sums in
/// other orders, within float rounding of it):
///   m = zc(x1; norm); cond = 1 + softmax(cond_vᵀ m) · cond_u; z = pad(m, n)
///   z = K_1(d1 ⊙ z)[p1]; z = K_2(silu(d2 ⊙ cond ⊙ z + b2))[p2]; z = K_3(d3 ⊙ z); out = (d4 ⊙ z)[:D]
/// Scratch: kron_mlp_scratch_floats(n) = 3n floats. out may equal x1 (x1 is read only first).
inline void kron_mlp(const KronMlp &w, const float *x1, float eps, float *scratch, float *out) {
  kron_mlp_with(w, x1, eps, scratch, out, kronecker, silu_in_place);
}

} // namespace needle_rt
