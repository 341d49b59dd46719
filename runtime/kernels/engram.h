// needle_rt, engram memory.
// A part of needle_runtime.h, which includes the parts in order; include that, not this.
#ifndef NEEDLE_RUNTIME_H
#error "include needle_runtime.h"
#endif

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// Engram
// ---------------------------------------------------------------------------------------------

/// Stores token `token` of position t in the engram token ring: ring [capacity] int32, token of
/// position p at ring[p % capacity]. capacity >= max(orders) keeps every token a hash reads.
/// Call it before engram_slot / engram_gather for position t. Never needs clearing: slots of
/// positions before 0 are never read.
inline void engram_remember(int32_t *ring, int64_t capacity, int64_t t, int32_t token) { ring[t % capacity] = token; }

/// The slot of table oi·E_h + h for order `order` at position t, exactly reference::engramSlot
/// (uint32 arithmetic mod 2^32):
///   acc = 0x9E3779B9·(oi·E_h + h + 1); acc = (acc ^ tok[t−i])·0x01000193 for i < order
///   (tok before position 0 is 0); acc ^= acc >> 15; slot = acc mod slots.
/// Tokens come from the ring of engram_remember (capacity >= order).
inline uint32_t engram_slot(const int32_t *ring, int64_t capacity, int64_t t, int64_t order_index, int64_t order,
                            int64_t head, int64_t heads_per_order, int64_t slots) {
  uint32_t acc = 0x9E3779B9u * static_cast<uint32_t>(order_index * heads_per_order + head + 1);
  for (int64_t i = 0; i < order; ++i) {
    const uint32_t token = t - i >= 0 ? static_cast<uint32_t>(ring[(t - i) % capacity]) : 0u;
    acc = (acc ^ token) * 0x01000193u;
  }
  acc ^= acc >> 15;
  return acc % static_cast<uint32_t>(slots);
}

/// The engram rows of position t: for each order orders[oi] (n_orders of them) and head h <
/// heads, row `slot` of table oi·heads + h, fetched by fetch(index, row) with index =
/// table·slots + slot (the row of the tables seen as one [tables·slots] matrix), or zeros when
/// t < order − 1; concatenated in table order, `width` floats each, into out. Every row is first
/// asked for by prefetch(index): the rows lie anywhere in tables of megabytes, so each costs a
/// miss and a page walk, which one after another showed in a decode step's profile.
template <typename FetchRow, typename PrefetchRow>
inline void engram_rows(const int32_t *ring, int64_t capacity, int64_t t, const int64_t *orders, int64_t n_orders,
                        int64_t heads, int64_t slots, int64_t width, FetchRow fetch, PrefetchRow prefetch, float *out) {
  for (int64_t oi = 0; oi < n_orders; ++oi)
    for (int64_t h = 0; h < heads && t >= orders[oi] - 1; ++h)
      prefetch((oi * heads + h) * slots + engram_slot(ring, capacity, t, oi, orders[oi], h, heads, slots));
  for (int64_t oi = 0; oi < n_orders; ++oi)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t table = oi * heads + h;
      float *row = out + table * width;
      if (t < orders[oi] - 1) {
        for (int64_t i = 0; i < width; ++i)
          row[i] = 0.0f;
        continue;
      }
      fetch(table * slots + engram_slot(ring, capacity, t, oi, orders[oi], h, heads, slots), row);
    }
}

/// needle.engram_gather on CQ tables [n_orders·heads, slots, sub_dim]: each row in the rotated
/// domain (cq_row), padded to whole groups: out [n_orders·heads·cq_padded_cols(sub_dim)].
inline void engram_gather(const int32_t *ring, int64_t capacity, int64_t t, const int64_t *orders, int64_t n_orders,
                          int64_t heads, const uint8_t *packed, const uint16_t *norms, const float *codebook, int bits,
                          int64_t slots, int64_t sub_dim, float *out) {
  engram_rows(
      ring, capacity, t, orders, n_orders, heads, slots, cq_padded_cols(sub_dim),
      [&](int64_t index, float *row) { cq_row(packed, norms, codebook, bits, index, sub_dim, row); },
      [&](int64_t index) {
        prefetch_bytes(packed + index * cq_row_bytes(sub_dim, bits), cq_row_bytes(sub_dim, bits));
        prefetch_bytes(norms + index * cq_groups(sub_dim), cq_groups(sub_dim) * static_cast<int64_t>(sizeof(uint16_t)));
      },
      out);
}

/// needle.engram_gather on float tables [n_orders·heads][slots][sub_dim]: the rows as stored (no
/// rotation, no padding), into out [n_orders·heads·sub_dim].
inline void engram_gather_f32(const int32_t *ring, int64_t capacity, int64_t t, const int64_t *orders, int64_t n_orders,
                              int64_t heads, const float *tables, int64_t slots, int64_t sub_dim, float *out) {
  engram_rows(
      ring, capacity, t, orders, n_orders, heads, slots, sub_dim,
      [&](int64_t index, float *row) {
        std::memcpy(row, tables + index * sub_dim, static_cast<size_t>(sub_dim) * sizeof(float));
      },
      [&](int64_t index) { prefetch_bytes(tables + index * sub_dim, sub_dim * static_cast<int64_t>(sizeof(float))); },
      out);
}

/// needle.gather: out [cols] = row `row` of a float matrix [rows][cols].
inline void gather_row(const float *matrix, int64_t cols, int64_t row, float *out) {
  std::memcpy(out, matrix + row * cols, static_cast<size_t>(cols) * sizeof(float));
}

/// needle.engram_gate: out = u + σ(⟨unit(u), unit(k)⟩ / sqrt(n)) · v. ⟨unit(u), unit(k)⟩ is
/// ⟨u, k⟩ times both rms inverses, so no normalized copies are needed. out may equal u or v.
inline void engram_gate(const float *u, const float *key, const float *value, int64_t n, float eps, float *out) {
  const float cosine = dot(u, key, n) * rms_inverse(u, n, eps) * rms_inverse(key, n, eps);
  const float gate = sigmoid(cosine / std::sqrt(static_cast<float>(n)));
  for (int64_t i = 0; i < n; ++i)
    out[i] = u[i] + gate * value[i];
}

} // namespace needle_rt
