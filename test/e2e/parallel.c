/* A session on a lent pool (docs/c-interface.md, "Every core: a pool lent by the product"): the
 * same prompt and greedy decode with no pool, then on pools of 1, 2, 3 and 8 threads
 * (examples/pools/pool_threads.c), on pthreadpool (with -DWITH_PTHREADPOOL), on pools that run
 * the tasks in reverse or in a shuffled order, and on two threads at once with a pool each; every
 * run must give the same logits after every feed, the same confidence and embedding, bit for bit.
 * A counting pool shows that the model hands it work at all; NAME_set_parallel's refusals,
 * NAME_reset keeping the pool and NAME_restore dropping it are checked too. One line per check,
 * "ok" or "FAIL". Without threads (wasm32: -DNO_THREADS) only the single-threaded pools run.
 *
 *   parallel TOKENS STEPS
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"
#ifndef NO_THREADS
#include "../../examples/pools/pool_threads.h"
#include <threads.h>
#endif
#ifdef WITH_PTHREADPOOL
#include "../../examples/pools/pool_pthreadpool.h"
#include <pthreadpool.h>
#endif

enum { kMaxTokens = 256, kMaxSteps = 16 };

static int32_t prompt[kMaxTokens];
static size_t prompt_count;
static long steps;

/* What a run produced: the logits after the prompt and after each decode step, then the heads. */
struct outputs {
  float *logits; /* (steps + 1) x vocab */
  float confidence;
  float *embedding;
  int status;
};

static size_t vocab(void) { return FN(_info)()->vocab_size; }

static int32_t argmax(const float *logits) {
  int32_t best = 0;
  for (size_t i = 1; i < vocab(); ++i)
    if (logits[i] > logits[best])
      best = (int32_t)i;
  return best;
}

/* Opens a session, lends it `pool` (NULL: none), feeds the prompt and decodes greedily. */
static struct outputs run(const needle_parallel *pool) {
  struct outputs out = {calloc((size_t)(steps + 1) * vocab(), sizeof(float)), 0.0f,
                        calloc(FN(_info)()->embedding_dim + 1, sizeof(float)), NEEDLE_ERR_ARG};
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size)() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size);
  FN(_session) *s = arena ? FN(_open)(arena, size) : NULL;
  if (!s || !out.logits || !out.embedding || (pool && FN(_set_parallel)(s, pool) != NEEDLE_OK)) {
    free(arena);
    return out;
  }
  out.status = FN(_feed)(s, prompt, prompt_count);
  for (long step = 0; out.status == NEEDLE_OK; ++step) {
    memcpy(out.logits + (size_t)step * vocab(), FN(_logits)(s), vocab() * sizeof(float));
    if (step == steps)
      break;
    const int32_t next = argmax(FN(_logits)(s));
    out.status = FN(_feed)(s, &next, 1);
  }
  out.confidence = FN(_confidence)(s);
  if (out.status == NEEDLE_OK)
    out.status = FN(_embedding)(s, out.embedding);
  free(arena);
  return out;
}

static struct outputs reference;

static int same(struct outputs a) {
  const int ok = a.status == NEEDLE_OK &&
                 !memcmp(a.logits, reference.logits, (size_t)(steps + 1) * vocab() * sizeof(float)) &&
                 !memcmp(&a.confidence, &reference.confidence, sizeof a.confidence) &&
                 !memcmp(a.embedding, reference.embedding, FN(_info)()->embedding_dim * sizeof(float));
  free(a.logits);
  free(a.embedding);
  return ok;
}

static void check(const char *what, int ok) { printf("%s %s\n", ok ? "ok" : "FAIL", what); }

/* Pools without threads: every task on the calling thread, in an order of their own. */
static unsigned long jobs, tasks;

static void reverse_for(void *pool, void (*fn)(void *, uint32_t), void *task, uint32_t count) {
  (void)pool;
  for (uint32_t i = count; i-- > 0;)
    fn(task, i);
}

static void shuffled_for(void *pool, void (*fn)(void *, uint32_t), void *task, uint32_t count) {
  uint64_t *state = pool;
  uint32_t order[1024];
  if (count > 1024)
    abort();
  for (uint32_t i = 0; i < count; ++i)
    order[i] = i;
  for (uint32_t i = count; i > 1; --i) { /* Fisher-Yates on a 64-bit LCG */
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    const uint32_t j = (uint32_t)((*state >> 33) % i), kept = order[i - 1];
    order[i - 1] = order[j];
    order[j] = kept;
  }
  for (uint32_t i = 0; i < count; ++i)
    fn(task, order[i]);
}

static void counting_for(void *pool, void (*fn)(void *, uint32_t), void *task, uint32_t count) {
  (void)pool;
  ++jobs;
  tasks += count;
  for (uint32_t i = 0; i < count; ++i)
    fn(task, i);
}

#ifndef NO_THREADS
static int threads_run(uint32_t threads) {
  needle_threads_pool *pool = needle_threads_pool_create(threads);
  if (!pool)
    return 0;
  const needle_parallel p = {needle_threads_pool_parallel_for, pool, needle_threads_pool_threads(pool)};
  const int ok = same(run(&p));
  needle_threads_pool_destroy(pool);
  return ok;
}

static int session_thread(void *result) {
  *(int *)result = threads_run(2);
  return 0;
}
#endif

/* NAME_set_parallel's refusals, and which calls keep the pool. */
static void check_interface(void) {
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size)() + align - 1) / align * align;
  unsigned char *arena = aligned_alloc(align, size), *copy = aligned_alloc(align, size);
  FN(_session) *s = arena ? FN(_open)(arena, size) : NULL;
  if (!s || !copy) {
    check("a session", 0);
    return;
  }
  needle_parallel counting = {counting_for, NULL, 4}, broken = {NULL, NULL, 2}, one = {NULL, NULL, 1};
  check("no session refused", FN(_set_parallel)(NULL, &counting) == NEEDLE_ERR_ARG);
  check("no parallel_for refused", FN(_set_parallel)(s, &broken) == NEEDLE_ERR_ARG);
  check("one worker needs no parallel_for", FN(_set_parallel)(s, &one) == NEEDLE_OK);
  check("no pool", FN(_set_parallel)(s, NULL) == NEEDLE_OK);
  FN(_set_parallel)(s, &counting);
  jobs = tasks = 0;
  FN(_feed)(s, prompt, prompt_count);
  printf("%s the pool ran %lu jobs of %lu tasks\n", jobs > 0 && tasks > jobs ? "ok" : "FAIL", jobs, tasks);
  FN(_reset)(s);
  const unsigned long before = jobs;
  FN(_feed)(s, prompt, 1);
  check("reset keeps the pool", jobs > before);
  memcpy(copy, arena, FN(_arena_size)());
  FN(_session) *restored = FN(_restore)(copy, size);
  const unsigned long restored_before = jobs;
  check("restored", restored && FN(_feed)(restored, prompt, 1) == NEEDLE_OK);
  check("restore drops the pool", jobs == restored_before);
  check("the image's session keeps it", FN(_feed)(s, prompt, 1) == NEEDLE_OK && jobs > restored_before);
  FN(_set_parallel)(s, NULL);
  const unsigned long taken = jobs;
  FN(_feed)(s, prompt, 1);
  check("a pool taken away", jobs == taken);
  free(arena);
  free(copy);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: parallel TOKENS STEPS\n");
    return 1;
  }
  for (char *p = argv[1]; *p && prompt_count < kMaxTokens; ++prompt_count) {
    prompt[prompt_count] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  steps = strtol(argv[2], NULL, 10);
  if (steps < 0 || steps > kMaxSteps) {
    fprintf(stderr, "parallel: STEPS is 0..%d\n", kMaxSteps);
    return 1;
  }
  reference = run(NULL);
  check("the run without a pool", reference.status == NEEDLE_OK);
  check_interface();
  needle_parallel reverse = {reverse_for, NULL, 4};
  check("reverse order", same(run(&reverse)));
  uint64_t seed = 7;
  needle_parallel shuffled = {shuffled_for, &seed, 3};
  check("shuffled order", same(run(&shuffled)));
#ifndef NO_THREADS
  check("1 thread", threads_run(1));
  check("2 threads", threads_run(2));
  check("3 threads", threads_run(3));
  check("8 threads", threads_run(8));
  thrd_t other;
  int mine = 0, theirs = 0;
  const int started = thrd_create(&other, session_thread, &theirs) == thrd_success;
  session_thread(&mine);
  check("two sessions on two threads, a pool each", started && thrd_join(other, NULL) == thrd_success && mine && theirs);
#endif
#ifdef WITH_PTHREADPOOL
  pthreadpool_t pool = pthreadpool_create(2);
  const needle_parallel p = {needle_pthreadpool_parallel_for, pool, (uint32_t)pthreadpool_get_threads_count(pool)};
  check("pthreadpool", pool && same(run(&p)));
  pthreadpool_destroy(pool);
#endif
  free(reference.logits);
  free(reference.embedding);
  return 0;
}
