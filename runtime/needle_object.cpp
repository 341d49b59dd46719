// The runtime as the object backend links it: needlec compiles this file to LLVM bitcode once
// per architecture at its own build time (clang-19, runtime/CMakeLists.txt), carries the
// bitcode, and links it with each model's @step (codegen/Object). Nothing here is per model:
// the model's module defines needle_step, needle_facts and needle_info; needlec renames the
// needle_abi_* functions to NAME_* and internalizes everything else, so two models (or two
// needlec versions) link into one program without clashing.
#include "needle_runtime.h"

namespace {
/// NAME_info_t of docs/c-interface.md.
struct ModelInfo {
  uint32_t vocab_size, d_model, num_layers, max_seq_len, embedding_dim;
  const int32_t *source_blocks;
};
} // namespace

extern "C" {

// Defined by the model's module.
extern const needle_rt::ModelFacts needle_facts;
extern const ModelInfo needle_info;
void needle_step(unsigned char *arena, int32_t token, int64_t t);

// The C interface; needlec renames needle_abi_X to NAME_X.
const ModelInfo *needle_abi_info(void) { return &needle_info; }
size_t needle_abi_arena_size(void) { return static_cast<size_t>(needle_facts.arena_size); }
size_t needle_abi_arena_align(void) { return static_cast<size_t>(needle_facts.arena_align); }
void *needle_abi_open(void *arena, size_t size) { return needle_rt::session_open(needle_facts, arena, size); }
void needle_abi_reset(void *s) { needle_rt::session_reset(needle_facts, s); }
int needle_abi_feed(void *s, const int32_t *tokens, size_t n) {
  return needle_rt::session_feed(needle_facts, needle_step, s, tokens, n);
}
const float *needle_abi_logits(const void *s) { return needle_rt::session_logits(needle_facts, s); }
float needle_abi_confidence(const void *s) { return needle_rt::session_confidence(needle_facts, s); }
int needle_abi_embedding(const void *s, float *out) { return needle_rt::session_embedding(needle_facts, s, out); }
size_t needle_abi_position(const void *s) { return needle_rt::session_position(s); }

} // extern "C"

// The kernels @step calls (codegen/Lower/Lower.cpp), by name: the model's module declares
// needle_k_X with the types of its arguments, and needlec binds it to needle_kernel_X's target
// after checking that the two function types are the same.
#define NEEDLE_KERNEL(name) extern "C" const auto needle_kernel_##name = &needle_rt::name;
NEEDLE_KERNEL(attention)
NEEDLE_KERNEL(block_update)
NEEDLE_KERNEL(causal_taps)
NEEDLE_KERNEL(cq_matvec)
NEEDLE_KERNEL(cq_row)
NEEDLE_KERNEL(engram_gate)
NEEDLE_KERNEL(engram_gather)
NEEDLE_KERNEL(engram_gather_f32)
NEEDLE_KERNEL(engram_remember)
NEEDLE_KERNEL(gather_row)
NEEDLE_KERNEL(hadamard)
NEEDLE_KERNEL(head_confidence_into)
NEEDLE_KERNEL(head_embedding)
NEEDLE_KERNEL(head_pool_add_unless_pad)
NEEDLE_KERNEL(head_pool_finish)
NEEDLE_KERNEL(kron_mlp_flat)
NEEDLE_KERNEL(lane_mean)
NEEDLE_KERNEL(lane_norm)
NEEDLE_KERNEL(lane_read)
NEEDLE_KERNEL(lane_write)
NEEDLE_KERNEL(lanes_init)
NEEDLE_KERNEL(matvec)
NEEDLE_KERNEL(mhc_gates)
NEEDLE_KERNEL(residual_gate_from)
NEEDLE_KERNEL(rope_into)
NEEDLE_KERNEL(scale)
NEEDLE_KERNEL(sigmoid_gate)
NEEDLE_KERNEL(unpad_rows)
NEEDLE_KERNEL(zc_norm)
