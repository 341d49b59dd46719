// needle_rt's contract with the compiler: what needlec must agree on with the kernels it calls.
// The CQ group size, the weight layouts needlec re-lays CQ matrices into (docs/targets.md,
// "Weight layouts"), the state and scratch each kernel needs (the arena planner places them), the
// facts a compiled model gives the session, and the status codes of the C interface. needlec
// includes this header alone; needle_runtime.h includes it first. Self-contained C++17, no
// kernels.
#ifndef NEEDLE_RT_CONTRACT_H
#define NEEDLE_RT_CONTRACT_H

#include <cstdint>

namespace needle_rt {

// ---------------------------------------------------------------------------------------------
// CQ (docs/cq-format.md)
// ---------------------------------------------------------------------------------------------

/// The CQ group size G.
constexpr int64_t cq_group = 128;

/// Cp: cols rounded up to whole groups.
inline int64_t cq_padded_cols(int64_t cols) { return (cols + cq_group - 1) / cq_group * cq_group; }
/// Bytes of one packed row: Cp indices of `bits` each (Cp is a multiple of 8).
inline int64_t cq_row_bytes(int64_t cols, int bits) { return cq_padded_cols(cols) * bits / 8; }
/// Groups (and fp16 norms) per row.
inline int64_t cq_groups(int64_t cols) { return cq_padded_cols(cols) / cq_group; }

// ---------------------------------------------------------------------------------------------
// Weight layouts: where each layout puts a CQ matrix's codes and norms
// ---------------------------------------------------------------------------------------------

/// The number of groups in the block of `block` groups that starts at group `first` (the last
/// block may hold fewer).
inline int64_t cq_block_count(int64_t groups, int64_t first, int64_t block) {
  return groups - first < block ? groups - first : block;
}

/// Where item i's group g is, counted in groups, when the groups are cut into blocks of `block`
/// (the last may hold fewer) and a block holds every one of `items` items' groups in it, item
/// after item: the block order of CqX8 (items are rows) and CqLut16 (items are tiles of rows).
inline int64_t cq_block_offset(int64_t items, int64_t groups, int64_t i, int64_t g, int64_t block) {
  const int64_t first = g - g % block;
  return first * items + i * cq_block_count(groups, first, block) + g % block;
}

/// CqX8: CQ4 re-laid by needlec for 8 vector lanes (the exact mode's; its CQ2 takes CqLut16).
///   - A group is 2 vectors of 32 bytes; column 64v + 32h + 8k + l is nibble h (0 low, 1 high)
///     of byte cq4_byte(k, l) of vector v. That is the order in which a byte lookup per byte of
///     the float and two rounds of unpacking within 128-bit halves (cq4x8_decode) hand back 32
///     indices' entries as 4 vectors of 8 consecutive columns.
///   - The groups are cut into blocks of 4 (the last may hold fewer), and a block holds every
///     row's groups in it, row after row: a pass over a block streams its bytes while its 512
///     inputs (per token) stay in L1. The norms follow the same order.
struct CqX8 {
  static constexpr int64_t block = 4, group_bytes = 64;
  /// The byte of a CQ4 vector that holds column 8k + l of its 32 (per nibble).
  static constexpr int64_t cq4_byte(int64_t k, int64_t l) { return l < 4 ? 4 * k + l : 12 + 4 * k + l; }
  /// Where row r's group g is, counted in groups (and in norms).
  static int64_t offset(int64_t rows, int64_t groups, int64_t r, int64_t g) {
    return cq_block_offset(rows, groups, r, g, block);
  }
};

/// CqLut16: CQ2 and CQ4 re-laid by needlec for the fast mode's table lookups (needlec
/// --activations int8, docs/targets.md "Weight layouts").
///   - A unit is 4/bits consecutive columns (a pair at 2 bits, one column at 4), and its code is
///     their indices, the first in the low bits: 4 bits, so a group has 32·bits units.
///   - Rows go in tiles of 16 (the last tile padded with zero codes and norms). A tile's group is
///     8·bits chunks of 32 bytes; byte 16·h + r of chunk q holds row r's codes of units 4q + h
///     (low nibble) and 4q + 2 + h (high nibble): one 16-entry byte shuffle per 128-bit half looks
///     up 16 rows' units at once (cq_matmul_lut16_fast_avx2).
///   - The groups are cut into blocks of 4 as in CqX8, a block holding every tile's groups in it,
///     tile after tile; a tile's 16 fp16 norms per group follow the same order.
struct CqLut16 {
  static constexpr int64_t tile = 16, block = 4;
  static int64_t tiles(int64_t rows) { return (rows + tile - 1) / tile; }
  /// Bytes of one tile's group: 16 rows of 128 indices at `bits`.
  static int64_t tile_group_bytes(int bits) { return tile * 16 * bits; }
  /// Where tile t's group g is, counted in tile groups (and in runs of 16 norms).
  static int64_t offset(int64_t tiles, int64_t groups, int64_t t, int64_t g) {
    return cq_block_offset(tiles, groups, t, g, block);
  }
  /// Where row r's code of unit u is in a tile's group: the byte, and the nibble (4: the high).
  static int64_t byte(int64_t r, int64_t u) { return 32 * (u / 4) + 16 * (u % 2) + r; }
  static int shift(int64_t u) { return u % 4 < 2 ? 0 : 4; }
};

/// CqLutDword: the fast mode's layout for AVX-512 with VBMI and VNNI (cq_matmul_dword_fast_avx512vnni), and
/// the object's exact CQ4 layout for AVX-512F (cq_matmul_dword_exact_avx512, and
/// cq_matmul_dword_exact_avx512vnni with VBMI and VNNI).
/// CqLut16's units, codes, tiles, blocks and norms; only a tile's group is cut otherwise, into
/// 4·bits chunks of 64 bytes, bytes 4r..4r+3 of chunk m holding row r's codes of units 8m + b
/// (the low nibble of byte 4r + b) and 8m + 4 + b (its high nibble). A row's 8 units share one
/// 32-bit lane: a byte permute of 4 units' tables looks up each byte's own unit, and one vpdpbusd
/// adds a row's 4 entries into its lane.
struct CqLutDword {
  static int64_t byte(int64_t r, int64_t u) { return 64 * (u / 8) + 4 * r + u % 4; }
  static int shift(int64_t u) { return u % 8 < 4 ? 0 : 4; }
};

/// CqLutChunkMajor: the object's exact CQ2 layout for AVX-512F (cq_matmul_chunkmajor_exact_avx512, and
/// cq_matmul_chunkmajor_exact_avx512vnni with VBMI and VNNI).
/// CqLutDword's tiles, units, codes and 64-byte chunks, in slabs of up to 64 tiles (1024 rows),
/// slab after slab; within a slab chunk-major: group by group, chunk by chunk, tile after tile,
/// so chunk m of tile t's group g starts chunk(...) bytes in. A tile's norms of a group, 16 fp16,
/// the same way: slab by slab, group by group, tile after tile. A kernel that holds one chunk's
/// tables in registers then reads a slab's tiles' codes for them as one stream, and the whole
/// matrix as one stream, slab after slab.
struct CqLutChunkMajor {
  static constexpr int64_t slab_tiles = 64;
  /// The first tile of t's slab, and the slab's tiles.
  static int64_t slab_start(int64_t t) { return t / slab_tiles * slab_tiles; }
  static int64_t slab_size(int64_t tiles, int64_t t) {
    return tiles - slab_start(t) < slab_tiles ? tiles - slab_start(t) : slab_tiles;
  }
  static int64_t chunk(int64_t tiles, int64_t groups, int64_t t, int64_t g, int64_t m, int bits) {
    const int64_t start = slab_start(t), chunks = 4 * bits;
    return (start * groups * chunks + (g * chunks + m) * slab_size(tiles, t) + (t - start)) * 64;
  }
  static int64_t norms(int64_t tiles, int64_t groups, int64_t t, int64_t g) {
    const int64_t start = slab_start(t);
    return CqLut16::tile * (start * groups + g * slab_size(tiles, t) + (t - start));
  }
};

/// The layout of one panel of a CQ matrix in cq_row_panels' list, which gathers a row from the
/// panels the matrix's products were cut into, each as its kernel lays it (docs/targets.md,
/// "Weight layouts"): the tied embedding's token row read where the logits keep it, rather than
/// from a second copy in the file's layout.
enum CqPanelLayout : int64_t {
  cq_panel_file,        // the file's (CqRowMajor)
  cq_panel_x8,          // CqX8
  cq_panel_lut16,       // CqLut16
  cq_panel_lut_dword,   // CqLutDword
  cq_panel_chunk_major, // CqLutChunkMajor
  cq_panel_tiled,       // the Halide kernels' tiles of rows, each tile element-major (needlec's tileRows)
};

/// Each panel's fields in cq_row_panels' list: its rows, its CqPanelLayout, and its tile (the rows
/// of a cq_panel_tiled tile; 0 otherwise).
inline constexpr int64_t cq_panel_fields = 3;

// ---------------------------------------------------------------------------------------------
// State and scratch: what each kernel keeps across tokens, and what it needs per call
// ---------------------------------------------------------------------------------------------

/// The most query heads attention_x86 takes at once (attention_avx512 takes needle3's six of a kv
/// head in one pass over its keys and values).
inline constexpr int kAttentionMostHeads = 6;

/// attention's scratch: the scores of the query heads it takes at once, at most the group of
/// heads / kv_heads (1 for the portable kernel, 2 for pairs).
constexpr int64_t attention_scratch_floats(int64_t capacity, int64_t heads, int64_t kv_heads) {
  const int64_t group = heads / kv_heads;
  return (group < kAttentionMostHeads ? group : kAttentionMostHeads) * capacity;
}

/// Slots of a causal_taps ring: the stride·(count − 1) past inputs the taps read, and `rollback`
/// more so that a session can go back that many positions (docs/c-interface.md, "Taking tokens
/// back"). No ring (0) for a single tap.
inline int64_t taps_capacity(int64_t count, int64_t stride, int64_t rollback) {
  return count > 1 ? stride * (count - 1) + rollback : 0;
}

/// Floats of a causal_taps ring of n-float inputs.
inline int64_t taps_state_floats(int64_t n, int64_t count, int64_t stride, int64_t rollback) {
  return taps_capacity(count, stride, rollback) * n;
}

/// Floats of one head's pooling state: rows·probes slots of (d + 2) floats each. Slot
/// s = r·probes + k starts at state + s·(d + 2) and holds [max, sum, acc[d]]: the largest score
/// so far, Σ_t e^(score_t − max) and Σ_t e^(score_t − max)·cell_{t,r}. All zeros = no position
/// kept (sum is >= 1 once one is), so a session is reset by zeroing it.
inline int64_t head_state_floats(int64_t rows, int64_t probes, int64_t d) { return rows * probes * (d + 2); }

/// Floats a head keeps in the arena: its pooling state and, to go back up to `rollback`
/// positions, that many snapshots of it after it (head_pool_snapshot).
inline int64_t head_slot_floats(int64_t rows, int64_t probes, int64_t d, int64_t rollback) {
  return (1 + rollback) * head_state_floats(rows, probes, d);
}

/// Scratch floats head_pool_finish needs: one factor and one softmax weight per (row, probe).
inline int64_t head_finish_scratch_floats(int64_t rows, int64_t probes) { return 2 * rows * probes; }

/// Scratch floats kron_mlp needs: cond, and two ping-pong buffers, n each.
inline int64_t kron_mlp_scratch_floats(int64_t n) { return 3 * n; }

// ---------------------------------------------------------------------------------------------
// The session's contract (docs/c-interface.md)
// ---------------------------------------------------------------------------------------------

/// What the interface needs to know of a compiled model. Offsets are bytes into the arena.
struct ModelFacts {
  int64_t arena_size, arena_align, outputs_end, max_seq_len, vocab_size, embedding_dim;
  int64_t logits;
  int64_t batch; // tokens one call of the step carries at most
  float confidence_bias;
  uint64_t fingerprint; // the model's weights, build and needlec (codegen/Lower/Fingerprint.h)
  int64_t max_rollback; // needlec --max-rollback: positions session_truncate can go back
  int64_t pool_count;   // the heads' pooling states: pools[2i] their offset, pools[2i+1] their floats
  const int64_t *pools; // each followed by max_rollback snapshots (head_slot_floats)
  int64_t depth;        // the blocks this step runs (docs/c-interface.md, "Every rung in one object")
  int64_t token_log;    // the arena offset of the log of fed tokens (token_log_bytes), 0 for none
};

/// Bytes of the log of fed tokens an object of several rungs keeps after the session's header,
/// from which NAME_reopen_depth feeds them again: one int32_t per position, whole 64-byte lines.
inline int64_t token_log_bytes(int64_t max_seq_len) { return (max_seq_len * 4 + 63) / 64 * 64; }

/// tokens[0..n) at positions t.. through the model (1 <= n <= batch): writes their state, and
/// the last token's outputs, into the arena.
using StepFunction = void (*)(unsigned char *arena, const int32_t *tokens, int64_t n, int64_t t);

/// A head's output (the confidence, or the embedding) into out, from its pooling state in the
/// arena: computed when asked, so a feed does not pay for heads nobody reads.
using HeadFunction = void (*)(const unsigned char *arena, float *out);

/// The header's NEEDLE_* status codes (status_err_arena: a truncate further back than the arena
/// keeps; status_err_space: an output buffer too small, the text and request functions only).
enum : int {
  status_ok = 0,
  status_err_arena = -1,
  status_err_token = -2,
  status_err_full = -3,
  status_err_arg = -4,
  status_err_space = -5
};

/// One task of a parallel stage (docs/c-interface.md, "Every core"): task i of the stage whose
/// step's arguments `context` holds.
using TaskFunction = void (*)(void *context, uint32_t i);

/// needle_parallel of docs/c-interface.md: the pool a product lends a session.
struct Parallel {
  void (*parallel_for)(void *pool, TaskFunction fn, void *context, uint32_t count);
  void *pool;
  uint32_t workers; // 0 or 1: no pool
};

/// What @step passes a parallel stage's tasks: its own arguments.
struct StepContext {
  unsigned char *arena;
  const int32_t *tokens;
  int64_t n, t;
};

/// The session's header, at the start of its arena (the planner reserves 64 bytes for it).
struct SessionHeader {
  int64_t position;        // tokens held
  uint64_t tag;            // session_tag() while open: tells a session from a never-opened arena
  int32_t high_water;      // the most tokens held since NAME_open or NAME_reset (session_truncate)
  uint32_t request_prefix; // the prompt prefix a request fed first (runtime/calls: request_prompt), 0: none
  float call_probability;  // NAME_call_probability: the call NAME_call last wrote, 0 for none
  int32_t depth;           // the rung (ModelFacts::depth) the session runs at
  Parallel parallel;       // NAME_set_parallel's pool; none after NAME_open and NAME_restore
  uint64_t capacity;       // the arena's bytes, as NAME_open or NAME_restore was given them
};
static_assert(sizeof(SessionHeader) <= 64, "codegen/Transforms/PlanSession.cpp reserves 64 bytes for the header");

} // namespace needle_rt

#endif // NEEDLE_RT_CONTRACT_H
