/* NAME_call_rank and NAME_call_top_k through the C interface, as a product with many tools calls
 * them:
 *
 *   route K < lines
 *
 * Each line of stdin is "t HEX" (a text) or "q HEX" (a query), the bytes as hex. For a text, one
 * output line: its ids as NAME_call encodes a query (NAME_encode, special tokens taken as text).
 * For a query, its ids, then " ; " and NAME_call_rank's order of every tool, then " ; " and
 * NAME_call_top_k's status (threshold 0) and the call's bytes as hex. The call, made right
 * after the ranking, must equal the same call on a fresh session, or the program fails.
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#define _POSIX_C_SOURCE 200809L /* getline */
#define PROGRAM "route"
#include "request.h"

#define TOOLS CAT(NEEDLE_NAME, _TOOL_COUNT)

static void call_top_k(FN(_session) * s, const char *text, size_t len, uint32_t k, answer *a) {
  a->length = 0;
  a->status = FN(_call_top_k)(s, text, len, 0.0f, k, a->out, CAP, &a->length, &a->confidence);
}

static void print_ids(const char *text, size_t len) {
  static unsigned char scratch[1 << 20];
  static int32_t ids[MAX_QUERY + 2];
  size_t count = 0;
  const int status = FN(_encode)(text, len, 0, scratch, sizeof scratch, ids, MAX_QUERY + 2, &count);
  if (status != NEEDLE_OK)
    fail("encode", status);
  for (size_t i = 0; i < count; ++i)
    printf(i ? " %d" : "%d", ids[i]);
}

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: route K < lines", argc);
  const uint32_t k = (uint32_t)strtoul(argv[1], NULL, 10);
  FN(_session) *reused = open_session();
  static char text[MAX_QUERY + 2];
  static answer got, fresh;
  char *line = NULL;
  size_t line_cap = 0;
  for (ssize_t n; (n = getline(&line, &line_cap, stdin)) > 2;) {
    const size_t len = read_query(line + 2, text);
    print_ids(text, len);
    if (line[0] == 'q') {
      uint32_t order[TOOLS];
      const int ranked = FN(_call_rank)(reused, text, len, order, TOOLS);
      if (ranked != NEEDLE_OK)
        fail("rank", ranked);
      printf(" ;");
      for (uint32_t i = 0; i < TOOLS; ++i)
        printf(" %u", order[i]);
      call_top_k(reused, text, len, k, &got);
      FN(_session) *clean = open_session();
      call_top_k(clean, text, len, k, &fresh);
      if (got.status != fresh.status || got.length != fresh.length || memcmp(got.out, fresh.out, got.length) ||
          memcmp(&got.confidence, &fresh.confidence, sizeof(float)))
        fail("a call after a ranking differs from the call on a fresh session", got.status);
      free(clean);
      printf(" ; %d ", got.status);
      for (size_t i = 0; i < got.length && got.status == NEEDLE_OK; ++i)
        printf("%02x", (unsigned char)got.out[i]);
    }
    printf("\n");
  }
  free(line);
  free(reused);
  return 0;
}
