/* Greedy decoding through the C interface of a compiled Needle model: feed a prompt of token ids,
 * then repeatedly feed the most likely next token. Prints the tokens, the confidence, and the
 * prefill and decode speeds. Plain C11; the model is whatever needle_add_model() compiled.
 *
 *   greedy_decode [PROMPT [TOKENS]]      e.g. greedy_decode 17,4242,9 32
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int32_t argmax(const float *logits, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; ++i)
    if (logits[i] > logits[best])
      best = i;
  return (int32_t)best;
}

int main(int argc, char **argv) {
  const char *prompt = argc > 1 ? argv[1] : "17,4242,9,1024,77";
  const long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 32;
  const model_info_t *info = model_info();
  int32_t tokens[256];
  size_t n = 0;
  for (char *p = (char *)prompt; *p && n < 256; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  /* The caller owns the memory: one arena per session, sized and aligned by the model. */
  const size_t align = model_arena_align(), size = (model_arena_size() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size);
  model_session *s = model_open(arena, size);
  if (!s) {
    fprintf(stderr, "greedy_decode: cannot open a session\n");
    return 1;
  }
  printf("model: %u blocks, vocabulary %u, d_model %u, arena %zu bytes\n", info->num_layers, info->vocab_size,
         info->d_model, model_arena_size());

  double start = seconds();
  int status = model_feed(s, tokens, n);
  const double prefill = seconds() - start;
  printf("prompt:");
  for (size_t i = 0; i < n; ++i)
    printf(" %d", tokens[i]);
  printf("\ngenerated:");
  start = seconds();
  long generated = 0;
  for (; status == NEEDLE_OK && generated < steps; ++generated) {
    const int32_t next = argmax(model_logits(s), info->vocab_size);
    printf(" %d", next);
    status = model_feed(s, &next, 1);
  }
  const double decode = seconds() - start;
  printf("\nconfidence: %.4f after %zu tokens\n", model_confidence(s), model_position(s));
  printf("prefill: %zu tokens in %.1f ms (%.1f tokens/s); decode: %ld tokens in %.1f ms (%.1f tokens/s)\n", n,
         1e3 * prefill, n / prefill, generated, 1e3 * decode, generated / decode);
  free(arena);
  return status == NEEDLE_OK || status == NEEDLE_ERR_FULL ? 0 : 1;
}
