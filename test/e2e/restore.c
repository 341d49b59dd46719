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

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define N(x) CAT(NEEDLE_NAME, x)
#define O(x) CAT(OTHER, x)

static void check(const char *what, int ok) { printf("%s %s\n", ok ? "ok" : "FAIL", what); }

static int same_outputs(const N(_session) * a, const N(_session) * b) {
  const uint32_t vocab = N(_info)()->vocab_size, dim = N(_info)()->embedding_dim;
  float *ea = calloc(dim + 1, sizeof(float)), *eb = calloc(dim + 1, sizeof(float));
  const float ca = N(_confidence)(a), cb = N(_confidence)(b);
  const int same = !memcmp(N(_logits)(a), N(_logits)(b), vocab * sizeof(float)) && !memcmp(&ca, &cb, sizeof ca) &&
                   N(_embedding)(a, ea) == NEEDLE_OK && N(_embedding)(b, eb) == NEEDLE_OK &&
                   !memcmp(ea, eb, dim * sizeof(float)) && N(_position)(a) == N(_position)(b);
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
  const size_t align = N(_arena_align)(), size = (N(_arena_size)() + align - 1) / align * align;
  unsigned char *first = aligned_alloc(align, size), *second = aligned_alloc(align, size + align);
  N(_session) *s = first ? N(_open)(first, size) : NULL;
  if (!s || !second || N(_feed)(s, tokens, n / 2) != NEEDLE_OK) {
    fprintf(stderr, "restore: no session\n");
    return 1;
  }
  /* The image, one alignment further on than the second buffer's start: another address. */
  unsigned char *moved = second + align;
  memcpy(moved, first, N(_arena_size)());
  check("too small", !N(_restore)(moved, N(_arena_size)() - 1));
  check("another model's image", !O(_restore)(moved, size));
  memmove(second + 1, moved, N(_arena_size)());
  check("misaligned", !N(_restore)(second + 1, size));
  memmove(moved, second + 1, N(_arena_size)());
  N(_session) *restored = N(_restore)(moved, size);
  check("restored", restored != NULL);
  if (!restored)
    return 1;
  check("same outputs after restore", same_outputs(s, restored));
  check("fed alike", N(_feed)(s, tokens + n / 2, n - n / 2) == NEEDLE_OK &&
                         N(_feed)(restored, tokens + n / 2, n - n / 2) == NEEDLE_OK);
  check("same outputs after the rest", same_outputs(s, restored));
  memset(first, 0, size);
  check("never opened", !N(_restore)(first, size));
  free(first);
  free(second);
  return 0;
}
