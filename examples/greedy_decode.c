/* Greedy decoding through the C interface of a compiled Needle model: feed a prompt, then
 * repeatedly feed the most likely next token. Prints the tokens, the confidence, and the prefill
 * and decode speeds; with a model compiled with a tokenizer, the prompt is text (encoded by the
 * model's NAME_encode) and the generated tokens are printed as text too (its streaming
 * decoder). Plain C11; the model is whatever needle_add_model() compiled.
 *
 *   greedy_decode [PROMPT [TOKENS]]      e.g. greedy_decode "The license" 32
 *                                        (a model without a tokenizer: greedy_decode 17,4242,9 32)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxPrompt = 4096 };

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

#ifdef model_HAS_TOKENIZER
static const char kDefaultPrompt[] = "The license";

/* The prompt's ids, by the model's tokenizer (the special tokens it names, its BOS/EOS). */
static size_t prompt_tokens(const char *prompt, int32_t *tokens) {
  const size_t len = strlen(prompt), scratch_size = model_encode_scratch_size(len);
  void *scratch = malloc(scratch_size);
  size_t n = 0;
  const int status = scratch ? model_encode(prompt, len, NEEDLE_ENCODE_SPECIAL | NEEDLE_ENCODE_BOS_EOS, scratch,
                                            scratch_size, tokens, kMaxPrompt, &n)
                             : NEEDLE_ERR_ARG;
  free(scratch);
  if (status != NEEDLE_OK) {
    fprintf(stderr, "greedy_decode: the prompt does not encode in %d tokens (status %d)\n", kMaxPrompt, status);
    exit(1);
  }
  return n;
}

/* Token `id`'s text, as much of it as is complete (a character split over tokens waits); a
 * token longer than the buffer is asked for again with room. */
static void print_text(model_decoder *decoder, int32_t id) {
  char piece[256], *out = piece;
  size_t len = 0;
  int status = model_decode_next(decoder, id, piece, sizeof piece, &len);
  if (status == NEEDLE_ERR_SPACE && (out = malloc(len)) != NULL)
    status = model_decode_next(decoder, id, out, len, &len);
  if (status == NEEDLE_OK)
    fwrite(out, 1, len, stdout);
  if (out != piece)
    free(out);
}
#else
static const char kDefaultPrompt[] = "17,4242,9,1024,77";

static size_t prompt_tokens(const char *prompt, int32_t *tokens) {
  size_t n = 0;
  for (char *p = (char *)prompt; *p && n < kMaxPrompt; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  return n;
}
#endif

int main(int argc, char **argv) {
  const char *prompt = argc > 1 ? argv[1] : kDefaultPrompt;
  const long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 32;
  const model_info_t *info = model_info();
  static int32_t tokens[kMaxPrompt], generated_tokens[4096];
  const size_t n = prompt_tokens(prompt, tokens);
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
  start = seconds();
  long generated = 0;
  for (; status == NEEDLE_OK && generated < steps && generated < 4096; ++generated) {
    generated_tokens[generated] = argmax(model_logits(s), info->vocab_size);
    status = model_feed(s, &generated_tokens[generated], 1);
  }
  const double decode = seconds() - start;
  printf("\ngenerated:");
  for (long i = 0; i < generated; ++i)
    printf(" %d", generated_tokens[i]);
#ifdef model_HAS_TOKENIZER
  model_decoder decoder; /* the prompt's tokens through it first: the decoder's start-of-text rule */
  model_decoder_init(&decoder);
  printf("\ntext: ");
  for (size_t i = 0; i < n; ++i)
    print_text(&decoder, tokens[i]);
  for (long i = 0; i < generated; ++i)
    print_text(&decoder, generated_tokens[i]);
  char tail[3];
  size_t tail_len = 0;
  if (model_decode_flush(&decoder, tail, sizeof tail, &tail_len) == NEEDLE_OK) /* U+FFFD for a cut character */
    fwrite(tail, 1, tail_len, stdout);
#endif
  printf("\nconfidence: %.4f after %zu tokens\n", model_confidence(s), model_position(s));
  printf("prefill: %zu tokens in %.1f ms (%.1f tokens/s); decode: %ld tokens in %.1f ms (%.1f tokens/s)\n", n,
         1e3 * prefill, n / prefill, generated, 1e3 * decode, generated / decode);
  free(arena);
  return status == NEEDLE_OK || status == NEEDLE_ERR_FULL ? 0 : 1;
}
