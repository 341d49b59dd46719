/* How often a shallow rung would have its draft accepted by the full model (docs/training.md):
 * two compiled depths of one model, the deep one ("target", compiled with --tools) decoding its
 * greedy call under the tools' mask, the shallow one ("draft") fed the same tokens and proposing
 * its own greedy token under the same mask at every step, as speculative decoding checks a
 * draft.
 *
 *   draft PROMPT_FILE < queries
 *
 * Each line of stdin is a query (its bytes as hex). Both models are fed the prompt around it as
 * NAME_call feeds it (the two sides of {{query}} encoded with special tokens, the query without,
 * each on its own). One output line per query: "AGREED STEPS", the steps where the draft's token
 * was the target's, of all the steps of the target's call (its end token included). The target's
 * NAME_call on the same query must report, as NAME_call_probability, the smallest probability of
 * the call's tokens under their masks that this replay computes (in double, to 1e-4), or the
 * program fails.
 * Built with -DDRAFT=<--name> -DDRAFT_HEADER="<OUT.h>" -DTARGET=<--name> -DTARGET_HEADER="<OUT.h>". C11. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include DRAFT_HEADER
#include TARGET_HEADER

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"
#define D(x) CAT(DRAFT, x)
#define T(x) CAT(TARGET, x)
#define MASK_WORDS CAT(TARGET, _CALL_MASK_WORDS)
#define MAX_IDS 4096

static void fail(const char *what, long value) {
  fprintf(stderr, "draft: %s (%ld)\n", what, value);
  exit(1);
}

static void *arena(size_t size, size_t align) {
  void *memory = aligned_alloc(align, (size + align - 1) / align * align);
  if (!memory)
    fail("no arena", (long)size);
  return memory;
}

/* Appends the ids of `text` to ids[*n]. */
static void encode(const char *text, size_t len, unsigned flags, int32_t *ids, size_t *n) {
  static unsigned char scratch[1 << 20];
  size_t count = 0;
  if (T(_encode_scratch_size)(len) > sizeof scratch)
    fail("a text too long", (long)len);
  const int status = T(_encode)(text, len, flags, scratch, sizeof scratch, ids + *n, MAX_IDS - *n, &count);
  if (status != NEEDLE_OK)
    fail("encode", status);
  *n += count;
}

/* The allowed token of the largest logit (the smallest id on a tie). */
static int32_t greedy(const float *logits, const uint32_t *mask, uint32_t vocab) {
  int32_t best = -1;
  for (uint32_t i = 0; i < vocab; ++i)
    if ((mask[i / 32] >> (i % 32) & 1) && (best < 0 || logits[i] > logits[best]))
      best = (int32_t)i;
  return best;
}

/* The probability of `token` under the softmax of the allowed tokens' logits. */
static double probability(const float *logits, const uint32_t *mask, uint32_t vocab, int32_t token) {
  double sum = 0;
  for (uint32_t i = 0; i < vocab; ++i)
    if (mask[i / 32] >> (i % 32) & 1)
      sum += exp((double)logits[i] - (double)logits[token]);
  return 1.0 / sum;
}

static void feed(D(_session) * d, T(_session) * t, const int32_t *ids, size_t n) {
  int status = D(_feed)(d, ids, n);
  if (status == NEEDLE_OK)
    status = T(_feed)(t, ids, n);
  if (status != NEEDLE_OK)
    fail("feed", status);
}

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: draft PROMPT_FILE < queries", argc);
  static char prompt[65536];
  FILE *f = fopen(argv[1], "rb");
  const size_t prompt_len = f ? fread(prompt, 1, sizeof prompt - 1, f) : 0;
  if (f)
    fclose(f);
  const char *hole = strstr(prompt, "{{query}}");
  if (!hole)
    fail("the prompt file has no {{query}}", (long)prompt_len);
  const size_t before = (size_t)(hole - prompt), after = before + strlen("{{query}}");
  D(_session) *d = D(_open)(arena(D(_arena_size)(), D(_arena_align)()), D(_arena_size)());
  T(_session) *t = T(_open)(arena(T(_arena_size)(), T(_arena_align)()), T(_arena_size)());
  if (!d || !t)
    fail("open", 0);
  const uint32_t vocab = T(_info)()->vocab_size, max_seq = T(_info)()->max_seq_len;
  static char text[65536];
  static int32_t ids[MAX_IDS];
  char *line = NULL;
  size_t line_cap = 0;
  for (ssize_t n; (n = getline(&line, &line_cap, stdin)) > 0;) {
    size_t len = 0;
    for (const char *hex = line; hex[0] && hex[0] != '\n' && hex[1] && len < sizeof text; hex += 2) {
      unsigned byte = 0;
      sscanf(hex, "%2x", &byte);
      text[len++] = (char)byte;
    }
    size_t count = 0;
    encode(prompt, before, NEEDLE_ENCODE_SPECIAL, ids, &count);
    encode(text, len, 0, ids, &count);
    encode(prompt + after, prompt_len - after, NEEDLE_ENCODE_SPECIAL, ids, &count);
    D(_reset)(d);
    T(_reset)(t);
    feed(d, t, ids, count);
    T(_call_state) state;
    T(_call_begin)(&state);
    size_t agreed = 0, steps = 0;
    double least = 1.0;
    while (T(_call_finished)(&state) == 0) {
      uint32_t mask[MASK_WORDS];
      const int status = T(_call_mask)(&state, max_seq - T(_position)(t), mask);
      if (status != NEEDLE_OK)
        fail("mask", status);
      const int32_t token = greedy(T(_logits)(t), mask, vocab);
      const double p = probability(T(_logits)(t), mask, vocab, token);
      least = p < least ? p : least;
      agreed += greedy(D(_logits)(d), mask, vocab) == token;
      ++steps;
      if (T(_call_advance)(&state, token) != NEEDLE_OK)
        fail("advance", token);
      if (T(_call_finished)(&state) == 0)
        feed(d, t, &token, 1);
    }
    static char call[65536];
    size_t call_len = 0;
    float confidence = 0;
    const int status = T(_call)(t, text, len, 0.0f, call, sizeof call, &call_len, &confidence);
    const double reported = T(_call_probability)(t);
    if (status != NEEDLE_OK || fabs(reported - least) > 1e-4 * least)
      fail("NAME_call_probability is not the replay's smallest token probability", status);
    printf("%zu %zu\n", agreed, steps);
  }
  free(line);
  return 0;
}
