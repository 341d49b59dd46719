/* Times a compiled model through its C interface: prefill (PREFILL tokens in one
 * feed), decode (DECODE tokens fed one at a time after it) and the heads (NAME_confidence and
 * NAME_embedding once, computed when asked), best of REPEATS, printed as
 * "prefill_tokens_per_s decode_tokens_per_s arena_bytes heads_microseconds". On one thread, or with
 * THREADS above 1 on a pool of that many (examples/pools/pool_threads.c, linked in); at DEPTH, a
 * rung of an object of several (0: the deepest). Built by scripts/bench-backends.sh,
 * bench-parallel.sh and bench-rungs.sh with -DNEEDLE_NAME and -DNEEDLE_HEADER like
 * test/e2e/run_model.c.
 *
 *   bench_model [PREFILL [DECODE [REPEATS [THREADS [DEPTH]]]]]      defaults 128 64 3 1 0 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include NEEDLE_HEADER
#include "pools/pool_threads.h"

#include "../e2e/model_name.h"
#include "seconds.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const long prefill = argc > 1 ? strtol(argv[1], NULL, 10) : 128;
  const long decode = argc > 2 ? strtol(argv[2], NULL, 10) : 64;
  const long repeats = argc > 3 ? strtol(argv[3], NULL, 10) : 3;
  const long threads = argc > 4 ? strtol(argv[4], NULL, 10) : 1;
  const uint32_t depth = argc > 5 && strtol(argv[5], NULL, 10) > 0 ? (uint32_t)strtol(argv[5], NULL, 10)
                                                                    : FN(_info)()->max_depth;
  const uint32_t vocab = FN(_info)()->vocab_size;
  int32_t *tokens = malloc((size_t)(prefill + decode) * sizeof(int32_t));
  for (long i = 0; i < prefill + decode; ++i)
    tokens[i] = (int32_t)((17 + 7919 * i) % vocab);
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size_depth)(depth) + align - 1) / align * align;
  void *arena = size ? aligned_alloc(align, size) : NULL;
  CAT(NEEDLE_NAME, _session) *s = arena ? FN(_open_depth)(arena, size, depth) : NULL;
  needle_threads_pool *pool = threads > 1 ? needle_threads_pool_create((uint32_t)threads) : NULL;
  const needle_parallel parallel = {needle_threads_pool_parallel_for, pool, (uint32_t)threads};
  if (!s || (threads > 1 && (!pool || FN(_set_parallel)(s, &parallel) != NEEDLE_OK)))
    return 1;
  float *embedding = malloc(FN(_info)()->embedding_dim * sizeof(float));
  double best_prefill = 1e30, best_decode = 1e30, best_heads = 1e30;
  volatile float sink = 0.0f;
  for (long r = 0; r < repeats; ++r) {
    FN(_reset)(s);
    double start = seconds();
    if (FN(_feed)(s, tokens, (size_t)prefill) != NEEDLE_OK)
      return 1;
    const double p = seconds() - start;
    start = seconds();
    for (long i = 0; i < decode; ++i)
      if (FN(_feed)(s, tokens + prefill + i, 1) != NEEDLE_OK)
        return 1;
    const double d = seconds() - start;
    start = seconds();
    sink = FN(_confidence)(s);
    if (FN(_embedding)(s, embedding) != NEEDLE_OK)
      return 1;
    const double h = seconds() - start;
    best_prefill = p < best_prefill ? p : best_prefill;
    best_decode = d < best_decode ? d : best_decode;
    best_heads = h < best_heads ? h : best_heads;
  }
  printf("%.2f %.2f %zu %.1f\n", prefill / best_prefill, decode / best_decode, FN(_arena_size_depth)(depth),
         1e6 * best_heads);
  (void)sink;
  needle_threads_pool_destroy(pool);
  free(embedding);
  free(tokens);
  free(arena);
  return 0;
}
