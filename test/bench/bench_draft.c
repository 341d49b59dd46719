/* What verifying drafted tokens costs (docs/performance.md, "Drafting"): after a CONTEXT-token
 * prefill, k tokens fed in one feed against the same k fed one at a time, for k = 1, 2, 4 and 8;
 * after each measurement NAME_truncate takes the k tokens back (not timed), so every one starts
 * from the same session. "warm": the measurements back to back, the weights in whatever cache
 * holds them; "cold": before each, a pass that writes and reads EVICT_MB MiB of other memory
 * (not timed), so the weights stream from DRAM. Best of REPEATS; one line per mode and k:
 * "MODE k one_feed_us k_feeds_us". The model needs needlec --max-rollback 8 or more.
 * Built by scripts/bench-draft.sh with -DNEEDLE_NAME and -DNEEDLE_HEADER like bench_model.c.
 *
 *   bench_draft [CONTEXT [REPEATS [EVICT_MB]]]      defaults 64 20 256 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include NEEDLE_HEADER

#include "../e2e/model_name.h"
#include "seconds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *evict_buffer;
static size_t evict_bytes;
static volatile unsigned long evict_sink;

/* Writes and reads every line of the eviction buffer: the caches then hold it, not the weights. */
static void evict(void) {
  unsigned long sum = 0;
  memset(evict_buffer, (int)(evict_sink & 0x7f), evict_bytes);
  for (size_t i = 0; i < evict_bytes; i += 64)
    sum += evict_buffer[i];
  evict_sink += sum;
}

int main(int argc, char **argv) {
  const size_t context = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
  const long repeats = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
  evict_bytes = (argc > 3 ? strtoul(argv[3], NULL, 10) : 256) << 20;
  const uint32_t vocab = FN(_info)()->vocab_size;
  if (FN(_info)()->max_rollback < 8 || repeats < 1) {
    fprintf(stderr, "bench_draft: the model needs needlec --max-rollback 8 or more\n");
    return 1;
  }
  int32_t tokens[1024];
  for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; ++i)
    tokens[i] = (int32_t)((17 + 7919 * i) % vocab);
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size)() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size);
  evict_buffer = malloc(evict_bytes);
  CAT(NEEDLE_NAME, _session) *s = arena ? FN(_open)(arena, size) : NULL;
  if (!s || !evict_buffer || context + 8 > 1024 || FN(_feed)(s, tokens, context) != NEEDLE_OK)
    return 1;
  const int32_t *draft = tokens + context;
  for (int cold = 0; cold < 2; ++cold)
    for (size_t k = 1; k <= 8; k *= 2) {
      double best_one = 1e30, best_each = 1e30;
      for (long r = 0; r < repeats; ++r) {
        if (cold)
          evict();
        double start = seconds();
        if (FN(_feed)(s, draft, k) != NEEDLE_OK)
          return 1;
        const double one = seconds() - start;
        if (FN(_truncate)(s, context) != NEEDLE_OK)
          return 1;
        if (cold)
          evict();
        start = seconds();
        for (size_t i = 0; i < k; ++i)
          if (FN(_feed)(s, draft + i, 1) != NEEDLE_OK)
            return 1;
        const double each = seconds() - start;
        if (FN(_truncate)(s, context) != NEEDLE_OK)
          return 1;
        best_one = one < best_one ? one : best_one;
        best_each = each < best_each ? each : best_each;
      }
      printf("%s %zu %.1f %.1f\n", cold ? "cold" : "warm", k, best_one * 1e6, best_each * 1e6);
    }
  free(evict_buffer);
  free(arena);
  return 0;
}
