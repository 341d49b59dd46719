/* A monotonic clock in seconds, for the bench programs that time a compiled model through its C
 * interface (bench_model.c, bench_draft.c, bench_reopen.c). Define _POSIX_C_SOURCE 200809L before any include. */
#ifndef NEEDLE_BENCH_SECONDS_H
#define NEEDLE_BENCH_SECONDS_H

#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
