// The runtime as the object backend links it: needlec compiles this file to LLVM bitcode once
// per architecture at its own build time (clang-19, runtime/CMakeLists.txt), carries the
// bitcode, and links it with each model's @step (codegen/Object). Nothing here is per model:
// the model's module defines the steps, the head functions and the facts of each of its rungs,
// and needle_info (and, with a tokenizer, needle_tokenizer); needlec renames the needle_abi_* functions to NAME_*
// (dropping the text functions of a model without a tokenizer) and internalizes everything
// else, so two models (or two needlec versions) link into one program without clashing.
#include "calls/session.h"
#include "needle_runtime.h"
#include "tokenizer/tokenizer.h"

namespace {
/// NAME_info_t of docs/c-interface.md.
struct ModelInfo {
  uint32_t vocab_size, d_model, num_layers, max_seq_len, embedding_dim;
  const int32_t *source_blocks;
  int32_t bos_id, eos_id;
  uint32_t stop_count;
  const int32_t *stop_ids;
  uint32_t max_rollback;
  uint32_t min_depth, max_depth;
};
} // namespace

extern "C" {

// Defined by the model's module: each array holds one entry per rung, from min_depth on.
extern const needle_rt::ModelFacts needle_facts[];
extern const needle_rt::StepFunction needle_steps[];
extern const needle_rt::HeadFunction needle_confidence_heads[];
extern const needle_rt::HeadFunction needle_embedding_heads[];
extern const ModelInfo needle_info;
extern const unsigned char needle_tokenizer[]; // the tokenizer's image (needle_rt::TokImage)
extern const unsigned char needle_calls[];     // the tool-call automaton's image (needle_rt::CallImage)
extern const unsigned char needle_records[];   // the record automaton's image (needle_rt::CallImage)
}

namespace {
/// The object's rungs, as the model's module defines them.
needle_rt::Ladder ladder() {
  return {needle_info.min_depth, needle_info.max_depth,   needle_facts,
          needle_steps,          needle_confidence_heads, needle_embedding_heads};
}
/// The rung the session runs at (needle_rt::rung_of).
needle_rt::Rung rung(const void *s) { return needle_rt::rung_of(ladder(), s); }
} // namespace

// The C interface; needlec renames needle_abi_X to NAME_X.
extern "C" {
const ModelInfo *needle_abi_info(void) { return &needle_info; }
size_t needle_abi_arena_size(void) { return needle_rt::ladder_arena_size(ladder(), needle_info.max_depth); }
size_t needle_abi_arena_size_depth(uint32_t depth) { return needle_rt::ladder_arena_size(ladder(), depth); }
size_t needle_abi_arena_align(void) { return static_cast<size_t>(needle_facts[0].arena_align); }
void *needle_abi_open(void *arena, size_t size) {
  return needle_rt::ladder_open(ladder(), arena, size, needle_info.max_depth);
}
void *needle_abi_open_depth(void *arena, size_t size, uint32_t depth) {
  return needle_rt::ladder_open(ladder(), arena, size, depth);
}
uint32_t needle_abi_depth(const void *s) { return needle_rt::ladder_depth(ladder(), s); }
int needle_abi_reopen_depth(void *s, uint32_t depth) { return needle_rt::ladder_reopen(ladder(), s, depth); }
void *needle_abi_restore(void *arena, size_t size) { return needle_rt::ladder_restore(ladder(), arena, size); }
void needle_abi_reset(void *s) { needle_rt::session_reset(rung(s).facts, s); }
int needle_abi_feed(void *s, const int32_t *tokens, size_t n) {
  const needle_rt::Rung r = rung(s);
  return needle_rt::session_feed(r.facts, r.step, s, tokens, n);
}
const float *needle_abi_logits(const void *s) { return needle_rt::session_logits(rung(s).facts, s); }
float needle_abi_confidence(const void *s) {
  const needle_rt::Rung r = rung(s);
  return needle_rt::session_confidence(r.facts, r.confidence_head, s);
}
int needle_abi_embedding(const void *s, float *out) {
  const needle_rt::Rung r = rung(s);
  return needle_rt::session_embedding(r.facts, r.embedding_head, s, out);
}
size_t needle_abi_position(const void *s) { return needle_rt::session_position(rung(s).facts, s); }
int needle_abi_truncate(void *s, size_t position) { return needle_rt::session_truncate(rung(s).facts, s, position); }
int needle_abi_set_parallel(void *s, const needle_rt::Parallel *p) {
  return needle_rt::session_set_parallel(rung(s).facts, s, p);
}
size_t needle_abi_sample_scratch_size(void) { return needle_rt::sample_scratch_size(needle_facts[0]); }
int needle_abi_sample(const void *s, const needle_rt::SampleParams *params, needle_rt::SampleRng *rng, void *scratch,
                      size_t scratch_size, int32_t *token) {
  return needle_rt::session_sample(rung(s).facts, s, params, rng, scratch, scratch_size, token);
}

// The text functions, on the tokenizer's image.
size_t needle_abi_encode_scratch_size(size_t length) {
  return needle_rt::tok_encode_scratch_size(needle_rt::tok_tables(needle_tokenizer), length);
}
int needle_abi_encode(const char *text, size_t length, unsigned flags, void *scratch, size_t scratch_size, int32_t *ids,
                      size_t cap, size_t *count) {
  return needle_rt::tok_encode(needle_rt::tok_tables(needle_tokenizer), text, length, flags, scratch, scratch_size, ids,
                               cap, count);
}
int needle_abi_token_bytes(int32_t id, const char **bytes, size_t *length) {
  return needle_rt::tok_token_bytes(needle_rt::tok_tables(needle_tokenizer), id, bytes, length);
}
int32_t needle_abi_token_id(const char *text, size_t length) {
  return needle_rt::tok_token_id(needle_rt::tok_tables(needle_tokenizer), text, length);
}
void needle_abi_decoder_init(void *d) {
  needle_rt::tok_decoder_init(needle_rt::tok_tables(needle_tokenizer), static_cast<needle_rt::TokDecoder *>(d));
}
int needle_abi_decode_next(void *d, int32_t id, char *out, size_t cap, size_t *length) {
  return needle_rt::tok_decode_next(needle_rt::tok_tables(needle_tokenizer), static_cast<needle_rt::TokDecoder *>(d),
                                    id, out, cap, length);
}
int needle_abi_decode_flush(void *d, char *out, size_t cap, size_t *length) {
  return needle_rt::tok_decode_flush(needle_rt::tok_tables(needle_tokenizer), static_cast<needle_rt::TokDecoder *>(d),
                                     out, cap, length);
}

// The call functions, on the tool-call automaton's image.
int needle_abi_call(void *s, const char *text, size_t length, float threshold, char *out, size_t cap,
                    size_t *out_length, float *confidence) {
  return needle_rt::session_call(rung(s), needle_tokenizer, needle_calls, s, text, length, threshold, out, cap,
                                 out_length, confidence);
}
int needle_abi_call_top_k(void *s, const char *text, size_t length, float threshold, uint32_t top_k, char *out,
                          size_t cap, size_t *out_length, float *confidence) {
  return needle_rt::session_call_top_k(rung(s), needle_tokenizer, needle_calls, s, text, length, threshold, top_k, out,
                                       cap, out_length, confidence);
}
int needle_abi_call_rank(void *s, const char *text, size_t length, uint32_t *tools, size_t count) {
  return needle_rt::session_call_rank(rung(s), needle_tokenizer, needle_calls, s, text, length, tools, count);
}
void needle_abi_call_begin(void *state) {
  needle_rt::call_begin(needle_rt::call_tables(needle_calls), static_cast<needle_rt::CallState *>(state));
}
int needle_abi_call_mask(const void *state, size_t budget, uint32_t *bits) {
  return needle_rt::call_mask(needle_rt::call_tables(needle_calls), static_cast<const needle_rt::CallState *>(state),
                              budget, bits);
}
int needle_abi_call_advance(void *state, int32_t token) {
  return needle_rt::call_advance(needle_rt::call_tables(needle_calls), static_cast<needle_rt::CallState *>(state),
                                 token);
}
int needle_abi_call_finished(const void *state) {
  return needle_rt::call_finished(needle_rt::call_tables(needle_calls),
                                  static_cast<const needle_rt::CallState *>(state));
}

// The record functions, on the record automaton's image; and what both requests keep.
int needle_abi_extract(void *s, const char *text, size_t length, char *out, size_t cap, size_t *out_length) {
  return needle_rt::session_extract(rung(s), needle_tokenizer, needle_records, s, text, length, out, cap, out_length);
}
void needle_abi_extract_begin(void *state) {
  needle_rt::call_begin(needle_rt::call_tables(needle_records), static_cast<needle_rt::CallState *>(state));
}
int needle_abi_extract_mask(const void *state, size_t budget, uint32_t *bits) {
  return needle_rt::call_mask(needle_rt::call_tables(needle_records), static_cast<const needle_rt::CallState *>(state),
                              budget, bits);
}
int needle_abi_extract_advance(void *state, int32_t token) {
  return needle_rt::call_advance(needle_rt::call_tables(needle_records), static_cast<needle_rt::CallState *>(state),
                                 token);
}
int needle_abi_extract_finished(const void *state) {
  return needle_rt::call_finished(needle_rt::call_tables(needle_records),
                                  static_cast<const needle_rt::CallState *>(state));
}
float needle_abi_call_probability(const void *s) { return needle_rt::session_call_probability(rung(s).facts, s); }

} // extern "C"

// Halide kernels (codegen/Halide) take halide_buffer_t descriptions of their arrays: these
// mirror HalideRuntime.h's (a stable C ABI), and the bridges below describe the runtime's arrays
// with them. The kernels' strides and extents are fixed when they are generated; the buffers
// carry the same numbers.
namespace needle_halide {

struct Dimension {
  int32_t min, extent, stride;
  uint32_t flags;
};
struct Type {
  uint8_t code, bits; // code: 0 int, 1 uint, 2 float
  uint16_t lanes;
};
struct Buffer {
  uint64_t device;
  const void *device_interface;
  const void *host;
  uint64_t flags;
  Type type;
  int32_t dimensions;
  Dimension *dim;
  void *padding;
};

inline Buffer buffer(const void *host, Type type, int32_t dimensions, Dimension *dim) {
  return {0, nullptr, host, 0, type, dimensions, dim, nullptr};
}

using CqMatvecKernel = int (*)(Buffer *packed, Buffer *norms, Buffer *x_rot, Buffer *y);

/// Calls a CQ kernel on the tiled weights: for one token (n = 1: x_rot and y 1-D) or for n
/// tokens (x_rot and y (column, token), `stride` floats between tokens).
__attribute__((always_inline)) inline void cq_matmul_tokens(CqMatvecKernel kernel, int64_t tile, const uint8_t *packed,
                                                            const uint16_t *norms, const float *codebook, int bits,
                                                            int64_t rows, int64_t cols, const float *x_rot, float *y,
                                                            int64_t stride, int64_t n) {
  (void)codebook; // built into the kernel
  const auto row_bytes = static_cast<int32_t>(needle_rt::cq_row_bytes(cols, bits));
  const auto groups = static_cast<int32_t>(needle_rt::cq_groups(cols));
  const auto lanes = static_cast<int32_t>(tile), tiles = static_cast<int32_t>(rows / tile);
  const Dimension tokens = {0, static_cast<int32_t>(n), static_cast<int32_t>(stride), 0};
  Dimension packed_dim[] = {{0, lanes, 1, 0}, {0, row_bytes, lanes, 0}, {0, tiles, lanes * row_bytes, 0}};
  Dimension norms_dim[] = {{0, lanes, 1, 0}, {0, groups, lanes, 0}, {0, tiles, lanes * groups, 0}};
  Dimension x_dim[] = {{0, groups * static_cast<int32_t>(needle_rt::cq_group), 1, 0}, tokens};
  Dimension y_dim[] = {{0, static_cast<int32_t>(rows), 1, 0}, tokens};
  const int32_t dimensions = n == 1 ? 1 : 2;
  Buffer packed_buffer = buffer(packed, {1, 8, 1}, 3, packed_dim);
  Buffer norms_buffer = buffer(norms, {1, 16, 1}, 3, norms_dim);
  Buffer x_buffer = buffer(x_rot, {2, 32, 1}, dimensions, x_dim);
  Buffer y_buffer = buffer(y, {2, 32, 1}, dimensions, y_dim);
  kernel(&packed_buffer, &norms_buffer, &x_buffer, &y_buffer);
}

/// needle_rt::cq_matvec through a Halide kernel generated for this shape (and its codebook), on
/// weights in the tiled layout: rows in tiles of `tile`, packed[tile][byte][lane] and
/// norms[tile][group][lane] (docs/targets.md). Always inlined, so each call names its kernel
/// directly (wasm32 would otherwise need an indirect function table).
__attribute__((always_inline)) inline void cq_matvec(CqMatvecKernel kernel, int64_t tile, const uint8_t *packed,
                                                     const uint16_t *norms, const float *codebook, int bits,
                                                     int64_t rows, int64_t cols, const float *x_rot, float *y) {
  cq_matmul_tokens(kernel, tile, packed, norms, codebook, bits, rows, cols, x_rot, y, 0, 1);
}

/// needle_rt::cq_matmul through the Halide kernels of its shape: the matvec for one token, the
/// batched kernel (x_rot and y as (column, token) with `stride` floats between tokens) for more.
__attribute__((always_inline)) inline void cq_matmul(CqMatvecKernel matvec, CqMatvecKernel matmul, int64_t tile,
                                                     const uint8_t *packed, const uint16_t *norms,
                                                     const float *codebook, int bits, int64_t rows, int64_t cols,
                                                     const float *x_rot, float *y, int64_t stride, int64_t n) {
  if (n == 1)
    return cq_matvec(matvec, tile, packed, norms, codebook, bits, rows, cols, x_rot, y);
  cq_matmul_tokens(matmul, tile, packed, norms, codebook, bits, rows, cols, x_rot, y, stride, n);
}

using AttentionKernel = int (*)(Buffer *q, Buffer *k_cache, Buffer *v_cache, int32_t kv_head, int32_t first_slot,
                                int32_t count, Buffer *scores, Buffer *out);

/// needle_rt::attention with its reading half on a Halide kernel generated for its shape, one
/// query head at a time (the scores of one head fill the scratch). The kernel reads consecutive
/// slots: a span that wraps past the ring's end fills the ring (kvCapacity makes a local ring as
/// long as its window), so it reads all of it from slot 0, which changes only the order of the
/// sums. Any other wrapping span (none by that contract) takes the portable kernel.
__attribute__((always_inline)) inline void attention(AttentionKernel kernel, const float *q, const float *k,
                                                     const float *v, int64_t heads, int64_t kv_heads, int64_t dqk,
                                                     int64_t dv, int64_t window, int64_t capacity, int64_t t,
                                                     float *k_cache, float *v_cache, float *scores, float *out) {
  const needle_rt::AttentionSpan span =
      needle_rt::attention_store(k, v, kv_heads * dqk, kv_heads * dv, window, capacity, t, k_cache, v_cache);
  const bool wraps = span.first_slot + span.count > capacity;
  if (wraps && span.count != capacity)
    return needle_rt::attention_read(q, heads, kv_heads, dqk, dv, capacity, span, k_cache, v_cache, scores, out);
  const auto first_slot = static_cast<int32_t>(wraps ? 0 : span.first_slot), count = static_cast<int32_t>(span.count);
  const auto kvh = static_cast<int32_t>(kv_heads), d = static_cast<int32_t>(dqk), e = static_cast<int32_t>(dv);
  const auto slots = static_cast<int32_t>(capacity), group = static_cast<int32_t>(heads / kv_heads);
  Dimension q_dim[] = {{0, d, 1, 0}};
  Dimension k_dim[] = {{0, slots, 1, 0}, {0, d, slots, 0}, {0, kvh, d * slots, 0}};
  Dimension v_dim[] = {{0, e, 1, 0}, {0, kvh, e, 0}, {0, slots, kvh * e, 0}};
  Dimension scores_dim[] = {{0, count, 1, 0}};
  Dimension out_dim[] = {{0, e, 1, 0}};
  Buffer k_buffer = buffer(k_cache, {2, 32, 1}, 3, k_dim);
  Buffer v_buffer = buffer(v_cache, {2, 32, 1}, 3, v_dim);
  Buffer scores_buffer = buffer(scores, {2, 32, 1}, 1, scores_dim);
  for (int32_t h = 0; h < static_cast<int32_t>(heads); ++h) {
    Buffer q_buffer = buffer(q + h * dqk, {2, 32, 1}, 1, q_dim);
    Buffer out_buffer = buffer(out + h * dv, {2, 32, 1}, 1, out_dim);
    kernel(&q_buffer, &k_buffer, &v_buffer, h / group, first_slot, count, &scores_buffer, &out_buffer);
  }
}

using KronMlpKernel = int (*)(Buffer *z, Buffer *cond, Buffer *d1, Buffer *d2, Buffer *b2, Buffer *d3, Buffer *d4,
                              Buffer *w1a, Buffer *w2a, Buffer *w3a, Buffer *w1b, Buffer *w2b, Buffer *w3b, Buffer *p1,
                              Buffer *p2, Buffer *out);

/// needle_rt::kron_mlp_flat: the conditioning in C++ (kron_mlp_condition, into the scratch), the
/// Kronecker chain on a Halide kernel generated for its shape.
__attribute__((always_inline)) inline void
kron_mlp_flat(KronMlpKernel kernel, int64_t d_model, int64_t n, int64_t ba, int64_t bb, const float *norm,
              const float *w1a, const float *w2a, const float *w3a, const float *w1b, const float *w2b,
              const float *w3b, const float *d1, const float *d2, const float *b2, const float *d3, const float *d4,
              const float *cond_v, const float *cond_u, const int32_t *p1, const int32_t *p2, const float *x1,
              float eps, float *scratch, float *out) {
  const needle_rt::KronMlp w = {d_model, n,  ba, bb, norm, w1a, w2a,    w3a,    w1b, w2b,
                                w3b,     d1, d2, b2, d3,   d4,  cond_v, cond_u, p1,  p2};
  float *cond = scratch, *z = scratch + n;
  needle_rt::kron_mlp_condition(w, x1, eps, cond, z);
  Dimension n_dim[] = {{0, static_cast<int32_t>(n), 1, 0}}, d_dim[] = {{0, static_cast<int32_t>(d_model), 1, 0}};
  Dimension a_dim[] = {{0, static_cast<int32_t>(ba * ba), 1, 0}}, b_dim[] = {{0, static_cast<int32_t>(bb * bb), 1, 0}};
  const Type f32 = {2, 32, 1}, i32 = {0, 32, 1};
  Buffer args[] = {
      buffer(z, f32, 1, n_dim),   buffer(cond, f32, 1, n_dim), buffer(d1, f32, 1, n_dim),  buffer(d2, f32, 1, n_dim),
      buffer(b2, f32, 1, n_dim),  buffer(d3, f32, 1, n_dim),   buffer(d4, f32, 1, d_dim),  buffer(w1a, f32, 1, a_dim),
      buffer(w2a, f32, 1, a_dim), buffer(w3a, f32, 1, a_dim),  buffer(w1b, f32, 1, b_dim), buffer(w2b, f32, 1, b_dim),
      buffer(w3b, f32, 1, b_dim), buffer(p1, i32, 1, n_dim),   buffer(p2, i32, 1, n_dim),  buffer(out, f32, 1, d_dim)};
  kernel(&args[0], &args[1], &args[2], &args[3], &args[4], &args[5], &args[6], &args[7], &args[8], &args[9], &args[10],
         &args[11], &args[12], &args[13], &args[14], &args[15]);
}

using HadamardKernel = int (*)(Buffer *in, Buffer *out);

/// needle_rt::hadamard on a Halide kernel generated for its group size: the padding as the
/// portable kernel does it, then the kernel in place on whole groups (it reads a group whole
/// before it writes it).
__attribute__((always_inline)) inline void hadamard(HadamardKernel kernel, const float *in, int64_t n, int64_t group,
                                                    float *out) {
  const int64_t padded = needle_rt::hadamard_pad(in, n, group, out);
  Dimension dim[] = {{0, static_cast<int32_t>(padded), 1, 0}};
  Buffer in_buffer = buffer(out, {2, 32, 1}, 1, dim), out_buffer = buffer(out, {2, 32, 1}, 1, dim);
  kernel(&in_buffer, &out_buffer);
}

} // namespace needle_halide

// The kernels @step calls (codegen/Lower/Lower.cpp), by name: the model's module declares
// needle_k_X with the types of its arguments, and needlec binds it to needle_kernel_X's target
// after checking that the two function types are the same.
// The registry (needle_kernels.def) lists them with the instruction set each needs; this
// architecture's bitcode exports the ones it can compile.
#define NEEDLE_EXPORT_Portable(name) extern "C" const auto needle_kernel_##name = &needle_rt::name;
#if NEEDLE_RT_X86_KERNELS
#define NEEDLE_EXPORT_Avx2 NEEDLE_EXPORT_Portable
#define NEEDLE_EXPORT_Avx512 NEEDLE_EXPORT_Portable
#define NEEDLE_EXPORT_Avx512Vnni NEEDLE_EXPORT_Portable
#else
#define NEEDLE_EXPORT_Avx2(name)
#define NEEDLE_EXPORT_Avx512(name)
#define NEEDLE_EXPORT_Avx512Vnni(name)
#endif
#if NEEDLE_RT_WASM_KERNELS
#define NEEDLE_EXPORT_Simd128 NEEDLE_EXPORT_Portable
#else
#define NEEDLE_EXPORT_Simd128(name)
#endif
#if NEEDLE_RT_NEON_KERNELS
#define NEEDLE_EXPORT_Neon NEEDLE_EXPORT_Portable
#else
#define NEEDLE_EXPORT_Neon(name)
#endif
#define NEEDLE_EXPORT_Both(name, isa) NEEDLE_EXPORT_##isa(name)
#define NEEDLE_EXPORT_ObjectOnly(name, isa) NEEDLE_EXPORT_##isa(name)
#define NEEDLE_EXPORT_CppOnly(name, isa)
#define NEEDLE_KERNEL(name, signature, layout, mode, isa, backends) NEEDLE_EXPORT_##backends(name, isa)
#include "needle_kernels.def"
// What runs a parallel stage's tasks (codegen/Object/StepBuilder.cpp).
extern "C" const auto needle_kernel_run_tasks = &needle_rt::run_tasks;
extern "C" const auto needle_kernel_cq_matvec_halide = &needle_halide::cq_matvec;
extern "C" const auto needle_kernel_cq_matmul_halide = &needle_halide::cq_matmul;
extern "C" const auto needle_kernel_attention_halide = &needle_halide::attention;
extern "C" const auto needle_kernel_kron_mlp_flat_halide = &needle_halide::kron_mlp_flat;
extern "C" const auto needle_kernel_hadamard_halide = &needle_halide::hadamard;
