// needle_rt, the pooling heads.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Pooling heads (docs/model.md "Heads"): an online softmax over positions per (row, probe).
// ---------------------------------------------------------------------------------------------

/// Adds one position's cells to the pooling state (the caller skips pad tokens). cells[r] [d] is
/// the cell of row r (row 0: x0; row j: the j-th kept block's lane mean), probe_rows[r]
/// [probes][d] its probes (rows by pointer: the rungs of one object share each block's). Score = ⟨cell_r, probe_rk⟩ /
/// sqrt(d); when it beats the running max the old sums are rescaled by e^(old − new), else the new cell is weighted by
/// e^(score − max).
inline void head_pool_add(float *state, int64_t rows, int64_t probes, int64_t d, const float *const *cells,
                          const float *const *probe_rows) {
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < probes; ++k) {
      float *slot = state + (r * probes + k) * (d + 2), *acc = slot + 2;
      const float x = dot(cells[r], probe_rows[r] + k * d, d) * inv_sqrt;
      float keep = 1.0f, weight = 1.0f; // rescale of the old state, weight of the new cell
      if (slot[1] == 0.0f) {
        slot[0] = x;
      } else if (x > slot[0]) {
        keep = std::exp(slot[0] - x);
        slot[0] = x;
      } else {
        weight = std::exp(x - slot[0]);
      }
      slot[1] = slot[1] * keep + weight;
      for (int64_t e = 0; e < d; ++e)
        acc[e] = acc[e] * keep + weight * cells[r][e];
    }
}

/// Before position t is pooled: copies the pooling state (`floats` of them, head_state_floats)
/// into its snapshot for t, the (1 + t % rollback)-th state of its slot (head_slot_floats), so
/// session_truncate can bring back the state before any of the last `rollback` positions.
inline void head_pool_snapshot(float *state, int64_t floats, int64_t rollback, int64_t t) {
  std::memcpy(state + floats * (1 + t % rollback), state, static_cast<size_t>(floats) * sizeof(float));
}

/// The query mix of the pooled state into pooled [queries·d]:
///   R[r,k]   = unit(acc / sum) · gain[r,k]  = f_rk · acc, f_rk = gain / (sum·sqrt(mean((acc/sum)²) + eps))
///              (R = 0 when no position was kept);
///   w_q      = softmax over (r,k) of ⟨R[r,k], query_q⟩ / sqrt(d) + row_bias[q][r][k];
///   pooled_q = Σ_{r,k} w_q[r,k] · R[r,k].
/// gain [rows][probes], query [queries][d], row_bias [queries][rows][probes].
/// Scratch: head_finish_scratch_floats(rows, probes) = 2·rows·probes floats.
inline void head_pool_finish(const float *state, int64_t rows, int64_t probes, int64_t d, const float *gain,
                             const float *query, const float *row_bias, int64_t queries, float eps, float *scratch,
                             float *pooled) {
  const int64_t slots = rows * probes;
  float *factor = scratch, *weight = scratch + slots;
  for (int64_t s = 0; s < slots; ++s) {
    const float *slot = state + s * (d + 2), sum = slot[1];
    factor[s] =
        sum == 0.0f
            ? 0.0f
            : gain[s] / (sum * std::sqrt(dot(slot + 2, slot + 2, d) / (sum * sum) / static_cast<float>(d) + eps));
  }
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t q = 0; q < queries; ++q) {
    float top = -INFINITY, sum = 0.0f;
    for (int64_t s = 0; s < slots; ++s) {
      weight[s] = factor[s] * dot(state + s * (d + 2) + 2, query + q * d, d) * inv_sqrt + row_bias[q * slots + s];
      top = weight[s] > top ? weight[s] : top;
    }
    for (int64_t s = 0; s < slots; ++s)
      sum += weight[s] = std::exp(weight[s] - top);
    float *p = pooled + q * d;
    for (int64_t e = 0; e < d; ++e)
      p[e] = 0.0f;
    for (int64_t s = 0; s < slots; ++s) {
      const float c = weight[s] / sum * factor[s];
      const float *acc = state + s * (d + 2) + 2;
      for (int64_t e = 0; e < d; ++e)
        p[e] += c * acc[e];
    }
  }
}

/// The confidence head's output σ(proj · pooled + bias), proj [width], width = queries·d.
inline float head_confidence(const float *pooled, const float *proj, float bias, int64_t width) {
  return sigmoid(dot(proj, pooled, width) + bias);
}

/// The embedding head's output p / sqrt(Σ p² + 1e-12), p = proj · pooled, proj [out_dim][width].
/// out [out_dim] must not overlap pooled.
inline void head_embedding(const float *pooled, const float *proj, int64_t out_dim, int64_t width, float *out) {
  matvec(proj, out_dim, width, pooled, out);
  const float inverse = 1.0f / std::sqrt(dot(out, out, out_dim) + 1e-12f);
  for (int64_t i = 0; i < out_dim; ++i)
    out[i] *= inverse;
}

} // namespace needle_rt
