/* Two compiled models in one program: `needlec ... --name alpha -o alpha` and `needlec ...
 * --name beta -o beta`, both headers in this one translation unit (the error enum is guarded),
 * both objects linked together. Both sessions are open at once and fed token by token in turn;
 * each writes what needle-run writes (PREFIX.json, PREFIX.logits, PREFIX.emb; see run_model.c),
 * so test/lit/Inputs/close.py compares each with the reference interpreter at its own depth.
 *
 *   two_models TOKENS ALPHA_PREFIX BETA_PREFIX
 *
 * Built with -I<the directory of alpha.h and beta.h>. C11 (for aligned_alloc). */
#include "alpha.h"
#include "beta.h"
#include "outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
  fprintf(stderr, "two_models: %s\n", what);
  return 1;
}

static void *arena_for(size_t size, size_t align) { return aligned_alloc(align, (size + align - 1) / align * align); }

static void print_info(const char *name, uint32_t layers, const int32_t *blocks, uint32_t max_seq, size_t arena) {
  printf("%s: layers %u, blocks", name, (unsigned)layers);
  for (uint32_t i = 0; i < layers; ++i)
    printf("%s%d", i ? "," : " ", (int)blocks[i]);
  printf("; max_seq %u, arena %zu bytes\n", (unsigned)max_seq, arena);
}

int main(int argc, char **argv) {
  if (argc != 4)
    return fail("usage: two_models TOKENS ALPHA_PREFIX BETA_PREFIX");
  int32_t tokens[4096];
  size_t n = 0;
  for (char *p = argv[1]; *p && n < 4096; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  const alpha_info_t *ai = alpha_info();
  const beta_info_t *bi = beta_info();
  print_info("alpha", ai->num_layers, ai->source_blocks, ai->max_seq_len, alpha_arena_size());
  print_info("beta", bi->num_layers, bi->source_blocks, bi->max_seq_len, beta_arena_size());

  void *alpha_arena = arena_for(alpha_arena_size(), alpha_arena_align());
  void *beta_arena = arena_for(beta_arena_size(), beta_arena_align());
  alpha_session *a = alpha_arena ? alpha_open(alpha_arena, alpha_arena_size()) : NULL;
  beta_session *b = beta_arena ? beta_open(beta_arena, beta_arena_size()) : NULL;
  if (!a || !b)
    return fail("open failed");
  /* Each model refuses the other's session (its header's tag names the model), which would
   * otherwise be read and written with the wrong layout and size. */
  if (beta_feed((beta_session *)a, tokens, 1) != NEEDLE_ERR_ARG || alpha_feed((alpha_session *)b, tokens, 1) != NEEDLE_ERR_ARG)
    return fail("a model took the other's session");
  printf("each refuses the other's session\n");
  for (size_t i = 0; i < n; ++i) {
    if (alpha_feed(a, tokens + i, 1) != NEEDLE_OK)
      return fail("alpha_feed failed");
    if (beta_feed(b, tokens + i, 1) != NEEDLE_OK)
      return fail("beta_feed failed");
  }

  float *alpha_emb = malloc(ai->embedding_dim * sizeof(float)), *beta_emb = malloc(bi->embedding_dim * sizeof(float));
  if (!alpha_emb || !beta_emb || alpha_embedding(a, alpha_emb) != NEEDLE_OK || beta_embedding(b, beta_emb) != NEEDLE_OK)
    return fail("embedding failed");
  if (!write_outputs(argv[2], alpha_logits(a), ai->vocab_size, alpha_emb, ai->embedding_dim, alpha_confidence(a),
                     alpha_position(a)) ||
      !write_outputs(argv[3], beta_logits(b), bi->vocab_size, beta_emb, bi->embedding_dim, beta_confidence(b),
                     beta_position(b)))
    return fail("cannot write the outputs");
  printf("alpha: position %zu, confidence %.6f\nbeta: position %zu, confidence %.6f\n", alpha_position(a),
         alpha_confidence(a), beta_position(b), beta_confidence(b));
  free(alpha_emb);
  free(beta_emb);
  free(alpha_arena);
  free(beta_arena);
  return 0;
}
