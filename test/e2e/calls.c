/* Walks a compiled model's tool-call automaton through its C interface, as a product's own
 * sampler would:
 *
 *   calls COUNT SEED [masks]
 *
 * Writes COUNT calls, each token drawn at random from NAME_call_mask under a budget drawn from
 * 48..175 tokens (doubled until a call fits), one line a call: "IDS ; HEX", its ids (the end
 * token included) and the bytes they stand for (NAME_token_bytes). With "masks", each call is
 * followed by one line per step, "M" and the mask with no budget as ranges "LO-HI" (HI
 * excluded), the step's token last: what test/e2e/check_calls.py holds against XGrammar's.
 * Every status is checked: a token the mask allows must advance, NAME_call_finished must say so
 * only at the end, and a call must end within its budget.
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>" [-DSTEPS=_extract: the records]. C11. */
#include NEEDLE_HEADER

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"
#define WORDS CAT(NEEDLE_NAME, _CALL_MASK_WORDS)
/* Which automaton: the calls' (NAME_call_mask and the rest), or with -DSTEPS=_extract the
 * record automaton's (NAME_extract_mask and the rest). */
#ifndef STEPS
#define STEPS _call
#endif
#define STEP(x) CAT(FN(STEPS), x)
#define MAX_TOKENS 4096

static uint64_t random_state;
static uint32_t next_random(void) { /* xorshift64*: the same walk on every target */
  random_state ^= random_state >> 12;
  random_state ^= random_state << 25;
  random_state ^= random_state >> 27;
  return (uint32_t)((random_state * 2685821657736338717ull) >> 32);
}

static void fail(const char *what, long value) {
  fprintf(stderr, "calls: %s (%ld)\n", what, value);
  exit(1);
}

static void print_ranges(const uint32_t *bits, uint32_t vocab) {
  printf("M");
  for (uint32_t id = 0; id < vocab;) {
    if (!((bits[id / 32] >> (id % 32)) & 1u)) {
      ++id;
      continue;
    }
    uint32_t end = id;
    while (end < vocab && ((bits[end / 32] >> (end % 32)) & 1u))
      ++end;
    printf(" %u-%u", id, end);
    id = end;
  }
  printf("\n");
}

/* One call under `budget` tokens into tokens[]; returns how many, or 0 when it cannot fit. */
static size_t walk(size_t budget, int32_t *tokens, uint32_t *bits, uint32_t vocab) {
  FN(_call_state) state;
  STEP(_begin)(&state);
  size_t n = 0;
  while (STEP(_finished)(&state) == 0) {
    const int status = STEP(_mask)(&state, budget - n, bits);
    if (status == NEEDLE_ERR_FULL && n == 0)
      return 0;
    if (status != NEEDLE_OK)
      fail("mask", status);
    uint32_t allowed = 0;
    for (uint32_t w = 0; w < WORDS; ++w)
      allowed += (uint32_t)__builtin_popcount(bits[w]);
    uint32_t pick = next_random() % allowed, id = 0;
    for (;; ++id)
      if (((bits[id / 32] >> (id % 32)) & 1u) && pick-- == 0)
        break;
    if (id >= vocab || STEP(_advance)(&state, (int32_t)id) != NEEDLE_OK)
      fail("an allowed token does not advance", (long)id);
    tokens[n++] = (int32_t)id;
  }
  if (n > budget)
    fail("a call ran past its budget", (long)n);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 3)
    fail("usage: calls COUNT SEED [masks]", argc);
  const long count = atol(argv[1]);
  random_state = (uint64_t)atoll(argv[2]) * 0x9E3779B97F4A7C15ull + 1;
  const int masks = argc > 3 && strcmp(argv[3], "masks") == 0;
  const uint32_t vocab = FN(_info)()->vocab_size;
  static uint32_t bits[WORDS];
  static int32_t tokens[MAX_TOKENS];
  FN(_call_state) bad;
  memset(&bad, 0xA5, sizeof bad);
  if (STEP(_mask)(&bad, 100, bits) != NEEDLE_ERR_ARG || STEP(_advance)(&bad, 0) != NEEDLE_ERR_ARG ||
      STEP(_finished)(&bad) != NEEDLE_ERR_ARG)
    fail("a state never begun is not refused", 0);
  for (long c = 0; c < count; ++c) {
    size_t n = 0;
    for (size_t budget = 48 + next_random() % 128; !(n = walk(budget, tokens, bits, vocab)); budget *= 2)
      if (budget > MAX_TOKENS / 2)
        fail("no call fits in the largest budget", (long)budget);
    for (size_t i = 0; i < n; ++i)
      printf("%s%d", i ? " " : "", tokens[i]);
    printf(" ;");
    for (size_t i = 0; i < n; ++i) {
      const char *bytes = NULL;
      size_t len = 0;
      if (FN(_token_bytes)(tokens[i], &bytes, &len) != NEEDLE_OK)
        fail("token_bytes", tokens[i]);
      for (size_t k = 0; k < len; ++k)
        printf("%s%02x", i || k ? "" : " ", (unsigned char)bytes[k]);
    }
    printf("\n");
    if (!masks)
      continue;
    FN(_call_state) state;
    STEP(_begin)(&state);
    for (size_t i = 0; i <= n; ++i) {
      const int status = STEP(_mask)(&state, SIZE_MAX, bits);
      if (status != (i < n ? NEEDLE_OK : NEEDLE_ERR_FULL))
        fail("mask with no budget", status);
      print_ranges(bits, vocab);
      if (i < n && STEP(_advance)(&state, tokens[i]) != NEEDLE_OK)
        fail("advance on replay", tokens[i]);
    }
  }
  return 0;
}
