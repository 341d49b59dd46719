/* Saving and restoring a session (docs/c-interface.md, "Saving and restoring a session"): a
 * session fed the first half of TOKENS is copied byte for byte to another address and restored
 * there; both are fed the second half and must agree bit for bit (logits, confidence,
 * embedding). An image is refused by the other model (same shapes, other weights), when the
 * arena is too small or misaligned, and when it was never opened. One line per check, "ok" or
 * "FAIL".
 *
 *   restore TOKENS
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>" -DOTHER=<--name> -DOTHER_HEADER="<OUT.h>". C11. */
#include NEEDLE_HEADER
#include OTHER_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"
#define O(x) CAT(OTHER, x)

static void check(const char *what, int ok) { printf("%s %s\n", ok ? "ok" : "FAIL", what); }

static int same_outputs(const FN(_session) * a, const FN(_session) * b) {
  const uint32_t vocab = FN(_info)()->vocab_size, dim = FN(_info)()->embedding_dim;
  float *ea = calloc(dim + 1, sizeof(float)), *eb = calloc(dim + 1, sizeof(float));
  const float ca = FN(_confidence)(a), cb = FN(_confidence)(b);
  const int same = !memcmp(FN(_logits)(a), FN(_logits)(b), vocab * sizeof(float)) && !memcmp(&ca, &cb, sizeof ca) &&
                   FN(_embedding)(a, ea) == NEEDLE_OK && FN(_embedding)(b, eb) == NEEDLE_OK &&
                   !memcmp(ea, eb, dim * sizeof(float)) && FN(_position)(a) == FN(_position)(b);
  free(ea);
  free(eb);
  return same;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: restore TOKENS\n");
    return 1;
  }
  int32_t tokens[1024];
  size_t n = 0;
  for (char *p = argv[1]; *p && n < 1024; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size)() + align - 1) / align * align;
  unsigned char *first = aligned_alloc(align, size), *second = aligned_alloc(align, size + align);
  FN(_session) *s = first ? FN(_open)(first, size) : NULL;
  if (!s || !second || FN(_feed)(s, tokens, n / 2) != NEEDLE_OK) {
    fprintf(stderr, "restore: no session\n");
    return 1;
  }
  /* The image, one alignment further on than the second buffer's start: another address. */
  unsigned char *moved = second + align;
  memcpy(moved, first, FN(_arena_size)());
  check("too small", !FN(_restore)(moved, FN(_arena_size)() - 1));
  check("another model's image", !O(_restore)(moved, size));
  memmove(second + 1, moved, FN(_arena_size)());
  check("misaligned", !FN(_restore)(second + 1, size));
  memmove(moved, second + 1, FN(_arena_size)());
  FN(_session) *restored = FN(_restore)(moved, size);
  check("restored", restored != NULL);
  if (!restored)
    return 1;
  check("same outputs after restore", same_outputs(s, restored));
  check("fed alike", FN(_feed)(s, tokens + n / 2, n - n / 2) == NEEDLE_OK &&
                         FN(_feed)(restored, tokens + n / 2, n - n / 2) == NEEDLE_OK);
  check("same outputs after the rest", same_outputs(s, restored));
  memset(first, 0, size);
  check("never opened", !FN(_restore)(first, size));
  free(first);
  free(second);
  return 0;
}
