/* NAME_call through the C interface, as a product calls it:
 *
 *   call THRESHOLD < queries
 *
 * Each line of stdin is a query (its bytes as hex). For each, one output line:
 * "STATUS CONFIDENCE PROBABILITY HEX": NAME_call's status, the confidence head's value (%.6f),
 * NAME_call_probability's (%.6f; 0 for no call) and the call's bytes, on a session that has
 * already served every query before it, in order. Every query is
 * also asked of a fresh session, and between two queries the reused session is put through a
 * query too long for it, a "no call" (threshold 2), and a call with no room for its output:
 * each answer must equal the fresh session's, bit for bit (the probability of an answer that is
 * not a call must be 0), or the program fails.
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#define _POSIX_C_SOURCE 200809L /* getline */
#define PROGRAM "call"
#include "request.h"

static void ask(FN(_session) * s, const char *text, size_t len, float threshold, size_t cap, answer *a) {
  a->confidence = -1.0f;
  a->length = 0;
  a->status = FN(_call)(s, text, len, threshold, a->out, cap, &a->length, &a->confidence);
  a->probability = FN(_call_probability)(s);
  if (a->status != NEEDLE_OK && a->probability != 0.0f)
    fail("an answer that is not a call has a probability", a->status);
  if (a->status == NEEDLE_OK && !(a->probability > 0.0f && a->probability <= 1.0f))
    fail("a call's probability is not in (0, 1]", a->status);
}

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: call THRESHOLD < queries", argc);
  const float threshold = strtof(argv[1], NULL);
  FN(_session) *reused = open_session();
  static char text[MAX_QUERY + 2];
  static answer got, fresh, other;
  char *line = NULL;
  size_t line_cap = 0;
  for (ssize_t n; (n = getline(&line, &line_cap, stdin)) > 0;) {
    const size_t len = read_query(line, text);
    ask(reused, text, len, threshold, CAP, &got);
    FN(_session) *clean = open_session();
    ask(clean, text, len, threshold, CAP, &fresh);
    free(clean);
    if (got.status != fresh.status || got.length != fresh.length || memcmp(got.out, fresh.out, got.length) ||
        memcmp(&got.confidence, &fresh.confidence, sizeof(float)) ||
        memcmp(&got.probability, &fresh.probability, sizeof(float)))
      fail("a reused session answers otherwise than a fresh one", got.status);
    printf("%d %.6f %.6f ", got.status, got.confidence, got.probability);
    for (size_t i = 0; i < got.length && got.status == NEEDLE_OK; ++i)
      printf("%02x", (unsigned char)got.out[i]);
    printf("\n");
    /* What may come between two requests; the refused query first, right after a call, whose
     * probability it must clear (ask checks). */
    static char too_long[MAX_QUERY + 1];
    memset(too_long, 'a', sizeof too_long);
    ask(reused, too_long, sizeof too_long, 0.0f, CAP, &other);
    if (other.status != NEEDLE_ERR_FULL)
      fail("a query past the limit must be refused", other.status);
    ask(reused, text, len, 2.0f, CAP, &other);
    if (other.status != NEEDLE_NO_CALL || other.length != 0)
      fail("a threshold of 2 must give no call", other.status);
    if (got.status == NEEDLE_OK && got.length > 0) {
      ask(reused, text, len, threshold, got.length - 1, &other);
      if (other.status != NEEDLE_ERR_SPACE || other.length != got.length)
        fail("a call with no room must say how much it needs", other.status);
    }
  }
  free(line);
  free(reused);
  return 0;
}
