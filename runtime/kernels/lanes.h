// needle_rt, the four mHC lanes and their gates.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// The four mHC lanes: always one contiguous [4][d] block, lane l at lanes + l·d.
// ---------------------------------------------------------------------------------------------

/// needle.lanes_init: all four lanes = x [d].
inline void lanes_init(const float *x, int64_t d, float *lanes) {
  for (int l = 0; l < 4; ++l)
    std::memcpy(lanes + l * d, x, static_cast<size_t>(d) * sizeof(float));
}

/// needle.lane_norm: nx [4d] = unit(concat(lanes)) — the lanes are contiguous, so this is
/// unit() over 4d values. nx may equal lanes.
inline void lane_norm(const float *lanes, int64_t d, float eps, float *nx) { unit_norm(lanes, 4 * d, eps, nx); }

/// Log-domain Sinkhorn on a row-major 4x4 in place: 20 rounds of subtracting each row's, then
/// each column's, logsumexp (max-shifted so exp cannot overflow), then exp. Columns of the
/// result sum to 1, rows nearly.
inline void sinkhorn4(float *m) {
  for (int round = 0; round < 20; ++round)
    for (int pass = 0; pass < 2; ++pass) {
      // pass 0: rows (stride 1 within, 4 between); pass 1: columns (stride 4 within, 1 between).
      const int within = pass == 0 ? 1 : 4, between = pass == 0 ? 4 : 1;
      for (int line = 0; line < 4; ++line) {
        float *v = m + line * between;
        float top = v[0];
        for (int i = 1; i < 4; ++i)
          top = v[i * within] > top ? v[i * within] : top;
        float sum = 0.0f;
        for (int i = 0; i < 4; ++i)
          sum += std::exp(v[i * within] - top);
        const float lse = top + std::log(sum);
        for (int i = 0; i < 4; ++i)
          v[i * within] -= lse;
      }
    }
  for (int i = 0; i < 16; ++i)
    m[i] = std::exp(m[i]);
}

/// needle.mhc_gates from the projections pre = Φ_pre nx [4], post = Φ_post nx [4], res = Φ_res
/// nx [16] of the block at lane position `position` (one = one-hot at position % 4):
///   h_pre  = σ(a[0]·pre + b_pre + 8·one − 4)                  [4]
///   h_post = 2σ(a[1]·post + b_post − 4·(1 − one))             [4]
///   mix    = sinkhorn(a[2]·reshape(res, 4×4) + b_res)          [16], row-major
/// by `sinkhorn` (sinkhorn4's signature).
template <typename Sinkhorn>
inline void mhc_gates_with(const float *pre, const float *post, const float *res, const float *a, const float *b_pre,
                           const float *b_post, const float *b_res, int64_t position, float *h_pre, float *h_post,
                           float *mix, Sinkhorn sinkhorn) {
  const int64_t own = position % 4;
  for (int l = 0; l < 4; ++l) {
    const float one = l == own ? 1.0f : 0.0f;
    h_pre[l] = sigmoid(a[0] * pre[l] + b_pre[l] + 8.0f * one - 4.0f);
    h_post[l] = 2.0f * sigmoid(a[1] * post[l] + b_post[l] - 4.0f * (1.0f - one));
  }
  for (int i = 0; i < 16; ++i)
    mix[i] = a[2] * res[i] + b_res[i];
  sinkhorn(mix);
}

/// needle.lane_read: u [d] = Σ_l h_pre[l] · lane_l. u must not overlap lanes.
inline void lane_read(const float *lanes, int64_t d, const float *h_pre, float *u) {
  for (int64_t e = 0; e < d; ++e)
    u[e] = h_pre[0] * lanes[e] + h_pre[1] * lanes[d + e] + h_pre[2] * lanes[2 * d + e] + h_pre[3] * lanes[3 * d + e];
}

/// needle.lane_write: out_i = Σ_k mix[i·4 + k] · lane_k + h_post[i] · y, all four lanes from the
/// lanes as they were. Column by column (all four values of element e read before any is
/// written), so out may equal lanes (in-place update); otherwise they must not overlap. y [d]
/// must not overlap out.
inline void lane_write(const float *lanes, int64_t d, const float *h_post, const float *mix, const float *y,
                       float *out) {
  for (int64_t e = 0; e < d; ++e) {
    const float l0 = lanes[e], l1 = lanes[d + e], l2 = lanes[2 * d + e], l3 = lanes[3 * d + e], ye = y[e];
    for (int i = 0; i < 4; ++i) {
      const float *m = mix + 4 * i;
      out[i * d + e] = h_post[i] * ye + ((m[0] * l0 + m[1] * l1) + (m[2] * l2 + m[3] * l3));
    }
  }
}

/// needle.lane_mean: out [d] = (lane_0 + lane_1 + lane_2 + lane_3) / 4 (a block's cell; the input
/// of the final norm). out must not overlap lanes 1..3 (it may equal lane 0).
inline void lane_mean(const float *lanes, int64_t d, float *out) {
  for (int64_t e = 0; e < d; ++e)
    out[e] = ((lanes[e] + lanes[d + e]) + (lanes[2 * d + e] + lanes[3 * d + e])) * 0.25f;
}

} // namespace needle_rt
