/* What NAME_reopen_depth costs (docs/c-interface.md, "Every rung in one object"): a session at
 * depth FROM holding TOKENS tokens moved to depth TO, against a session opened at TO and fed the
 * same tokens in one feed, best of REPEATS, printed as "reopen_microseconds prefill_microseconds".
 * Built by scripts/bench-rungs.sh with -DNEEDLE_NAME and -DNEEDLE_HEADER like test/e2e/run_model.c.
 *
 *   bench_reopen TOKENS FROM TO REPEATS */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include NEEDLE_HEADER

#include "../e2e/model_name.h"
#include "seconds.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: bench_reopen TOKENS FROM TO REPEATS\n");
    return 1;
  }
  const long count = strtol(argv[1], NULL, 10), repeats = strtol(argv[4], NULL, 10);
  const uint32_t from = (uint32_t)strtol(argv[2], NULL, 10), to = (uint32_t)strtol(argv[3], NULL, 10);
  int32_t *tokens = malloc((size_t)count * sizeof(int32_t));
  for (long i = 0; i < count; ++i)
    tokens[i] = (int32_t)((17 + 7919 * i) % FN(_info)()->vocab_size);
  const size_t align = FN(_arena_align)(), size = FN(_arena_size)();
  void *moved = aligned_alloc(align, size), *fresh = aligned_alloc(align, size);
  double best_reopen = 1e30, best_prefill = 1e30;
  for (long r = 0; r < repeats; ++r) {
    CAT(NEEDLE_NAME, _session) *a = FN(_open_depth)(moved, size, from), *b = FN(_open_depth)(fresh, size, to);
    if (!a || !b || FN(_feed)(a, tokens, (size_t)count) != NEEDLE_OK)
      return 1;
    double start = seconds();
    if (FN(_reopen_depth)(a, to) != NEEDLE_OK)
      return 1;
    const double reopen = seconds() - start;
    start = seconds();
    if (FN(_feed)(b, tokens, (size_t)count) != NEEDLE_OK)
      return 1;
    const double prefill = seconds() - start;
    best_reopen = reopen < best_reopen ? reopen : best_reopen;
    best_prefill = prefill < best_prefill ? prefill : best_prefill;
  }
  printf("%.0f %.0f\n", 1e6 * best_reopen, 1e6 * best_prefill);
  return 0;
}
