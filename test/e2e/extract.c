/* NAME_extract through the C interface, as a product calls it:
 *
 *   extract < queries
 *
 * Each line of stdin is a query (its bytes as hex). For each, one output line:
 * "STATUS PROBABILITY HEX": NAME_extract's status, NAME_call_probability's value (%.6f) and the
 * record's bytes, on a session that has already served every query before it, in order. Every
 * query is also asked of a fresh session, and between two queries the reused session is put
 * through a query too long for it, a record with no room for its output, bad arguments, and (in a
 * model with tools too) a NAME_call: each answer must equal the fresh session's, bit for bit, or
 * the program fails.
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#define _POSIX_C_SOURCE 200809L /* getline */
#define PROGRAM "extract"
#include "request.h"

static void ask(FN(_session) * s, const char *text, size_t len, size_t cap, answer *a) {
  a->length = 0;
  a->status = FN(_extract)(s, text, len, a->out, cap, &a->length);
  a->probability = FN(_call_probability)(s);
  if (a->status != NEEDLE_OK && a->probability != 0.0f)
    fail("an answer that is not a record has a probability", a->status);
  if (a->status == NEEDLE_OK && !(a->probability > 0.0f && a->probability <= 1.0f))
    fail("a record's probability is not in (0, 1]", a->status);
}

/* What may come between two requests, none of which may change the next answer. */
static void disturb(FN(_session) * s, const char *text, size_t len, const answer *got) {
  static answer other;
  static char too_long[MAX_QUERY + 1];
  memset(too_long, 'a', sizeof too_long);
  ask(s, too_long, sizeof too_long, CAP, &other);
  if (other.status != NEEDLE_ERR_FULL)
    fail("a query past the limit must be refused", other.status);
  if (got->status == NEEDLE_OK && got->length > 0) {
    ask(s, text, len, got->length - 1, &other);
    if (other.status != NEEDLE_ERR_SPACE || other.length != got->length)
      fail("a record with no room must say how much it needs", other.status);
  }
  size_t length = 0;
  if (FN(_extract)(s, NULL, 1, other.out, CAP, &length) != NEEDLE_ERR_ARG ||
      FN(_extract)(s, text, len, other.out, CAP, NULL) != NEEDLE_ERR_ARG ||
      FN(_extract)(NULL, text, len, other.out, CAP, &length) != NEEDLE_ERR_ARG ||
      FN(_extract)(s, (const char *)s, 1, other.out, CAP, &length) != NEEDLE_ERR_ARG)
    fail("bad arguments must be refused", 0);
#if CAT(NEEDLE_NAME, _HAS_CALLS)
  float confidence = 0;
  const int status = FN(_call)(s, text, len, 0.0f, other.out, CAP, &length, &confidence);
  if (status != NEEDLE_OK && status != NEEDLE_ERR_FULL)
    fail("a call between two records fails", status);
#endif
}

int main(void) {
  FN(_session) *reused = open_session();
  static char text[MAX_QUERY + 2];
  static answer got, fresh;
  char *line = NULL;
  size_t line_cap = 0;
  for (ssize_t n; (n = getline(&line, &line_cap, stdin)) > 0;) {
    const size_t len = read_query(line, text);
    ask(reused, text, len, CAP, &got);
    FN(_session) *clean = open_session();
    ask(clean, text, len, CAP, &fresh);
    free(clean);
    if (got.status != fresh.status || got.length != fresh.length || memcmp(got.out, fresh.out, got.length) ||
        memcmp(&got.probability, &fresh.probability, sizeof(float)))
      fail("a reused session answers otherwise than a fresh one", got.status);
    printf("%d %.6f ", got.status, got.probability);
    for (size_t i = 0; i < got.length && got.status == NEEDLE_OK; ++i)
      printf("%02x", (unsigned char)got.out[i]);
    printf("\n");
    disturb(reused, text, len, &got);
  }
  free(line);
  free(reused);
  return 0;
}
