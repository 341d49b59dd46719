/* Runs a compiled model through its C interface, as a product would, and writes what needle-run
 * writes: PREFIX.json ({"confidence": c, "position": p}), PREFIX.logits and PREFIX.emb (raw
 * little-endian f32), so test/lit/Inputs/close.py compares it with the reference interpreter.
 *
 *   run_model one|all TOKENS PREFIX     feed 1,2,3 one token at a time, or all at once
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11 (for aligned_alloc). */
#include NEEDLE_HEADER
#include "outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"

static int fail(const char *what) {
  fprintf(stderr, "run_model: %s\n", what);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[1], "one") && strcmp(argv[1], "all")))
    return fail("usage: run_model one|all TOKENS PREFIX");
  int32_t tokens[4096];
  size_t n = 0;
  for (char *p = argv[2]; *p && n < 4096; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  const size_t align = FN(_arena_align)(), size = FN(_arena_size)();
  void *arena = aligned_alloc(align, (size + align - 1) / align * align);
  CAT(NEEDLE_NAME, _session) *s = FN(_open)(arena, size);
  if (!s)
    return fail("open failed");
  if (!strcmp(argv[1], "all")) {
    if (FN(_feed)(s, tokens, n) != NEEDLE_OK)
      return fail("feed failed");
  } else {
    for (size_t i = 0; i < n; ++i)
      if (FN(_feed)(s, tokens + i, 1) != NEEDLE_OK)
        return fail("feed failed");
  }
  const CAT(NEEDLE_NAME, _info_t) *info = FN(_info)();
  float *embedding = malloc(info->embedding_dim * sizeof(float));
  if (FN(_embedding)(s, embedding) != NEEDLE_OK)
    return fail("embedding failed");
  if (!write_outputs(argv[3], FN(_logits)(s), info->vocab_size, embedding, info->embedding_dim, FN(_confidence)(s),
                     FN(_position)(s)))
    return fail("cannot write the outputs");
  free(embedding);
  free(arena);
  return 0;
}
