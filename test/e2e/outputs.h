/* What needle-run writes, written by the test programs that run compiled models:
 * PREFIX.json ({"confidence": c, "position": p}), PREFIX.logits and PREFIX.emb (raw
 * little-endian f32), so test/lit/Inputs/close.py compares them with the reference. C11. */
#ifndef NEEDLE_TEST_OUTPUTS_H
#define NEEDLE_TEST_OUTPUTS_H

#include <stddef.h>
#include <stdio.h>

static int write_floats(const char *prefix, const char *suffix, const float *values, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s", prefix, suffix);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(values, sizeof(float), n, f) != n)
    return 0;
  return fclose(f) == 0;
}

/* PREFIX.logits, PREFIX.emb and PREFIX.json of one session's outputs. */
static int write_outputs(const char *prefix, const float *logits, size_t vocab, const float *embedding, size_t dim,
                         float confidence, size_t position) {
  if (!write_floats(prefix, ".logits", logits, vocab) || !write_floats(prefix, ".emb", embedding, dim))
    return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s.json", prefix);
  FILE *f = fopen(path, "w");
  if (!f)
    return 0;
  /* %lu, not %zu: newlib as Debian builds it for arm-none-eabi prints no C99 size modifiers. */
  fprintf(f, "{\"confidence\": %.9g, \"position\": %lu}\n", confidence, (unsigned long)position);
  return fclose(f) == 0;
}

#endif /* NEEDLE_TEST_OUTPUTS_H */
