/* NAME_sample in a decoding loop (docs/c-interface.md, "Sampling"): feeds TOKENS, prints the
 * greedy choice (params NULL), then samples COUNT tokens from SEED, feeding each, with every rule
 * on (temperature 0.9, top-k 40, top-p 0.95, min-p 0.02, a repetition penalty of 1.3 over all
 * the tokens so far), and prints them. The same seed must give the same tokens on every target
 * and from both backends (sample.test).
 *
 *   sample TOKENS COUNT SEED
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>

#include "model_name.h"
#define MAX_TOKENS 1024

static int fail(const char *what, int status) {
  fprintf(stderr, "sample: %s (%d)\n", what, status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4)
    return fail("usage: sample TOKENS COUNT SEED", 0);
  int32_t tokens[MAX_TOKENS];
  size_t n = 0;
  for (char *p = argv[1]; *p && n < MAX_TOKENS; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  const size_t count = strtoul(argv[2], NULL, 10);
  if (n + count > MAX_TOKENS)
    return fail("too many tokens", 0);
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size)() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size);
  float *scratch = malloc(FN(_sample_scratch_size)());
  FN(_session) *s = arena ? FN(_open)(arena, size) : NULL;
  if (!s || !scratch)
    return fail("no session", 0);
  int status = FN(_feed)(s, tokens, n);
  if (status != NEEDLE_OK)
    return fail("feed", status);

  int32_t token = -1;
  if ((status = FN(_sample)(s, NULL, NULL, NULL, 0, &token)) != NEEDLE_OK)
    return fail("greedy", status);
  printf("greedy %d\n", (int)token);

  needle_rng rng = {strtoull(argv[3], NULL, 10)};
  printf("sampled");
  for (size_t i = 0; i < count; ++i) {
    const needle_sample_params params = {0.9f, 40, 0.95f, 0.02f, 1.3f, tokens, n};
    if ((status = FN(_sample)(s, &params, &rng, scratch, FN(_sample_scratch_size)(), &token)) != NEEDLE_OK)
      return fail("sample", status);
    tokens[n++] = token;
    printf(" %d", (int)token);
    if ((status = FN(_feed)(s, &token, 1)) != NEEDLE_OK)
      return fail("feed", status);
  }
  printf("\n");
  free(scratch);
  free(arena);
  return 0;
}
