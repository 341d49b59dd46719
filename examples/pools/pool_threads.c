/* needle_threads_pool (pool_threads.h): one job at a time. The caller publishes a job by bumping
 * `generation`; each worker takes tasks from the shared `next` counter, then counts itself
 * `finished`; the caller, having taken tasks too, waits until every worker has finished, so no
 * worker is still inside a job when the next one is written (and every task's writes are visible
 * to the caller: the counters are sequentially consistent). C11. */
#include "pool_threads.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <threads.h>

/* How long an idle worker polls for the next job before it sleeps: long enough to cover the gap
 * between the parallel stages of a step, short enough not to hold a core for long after it. */
enum { kSpinPolls = 1 << 17 };

struct needle_threads_pool {
  mtx_t lock;
  cnd_t wake;
  thrd_t *workers;
  uint32_t worker_count;
  atomic_uint generation; /* bumped for each job */
  atomic_uint sleepers;   /* workers waiting on `wake` */
  atomic_bool stop;
  /* The job, written before its generation is published. */
  void (*fn)(void *, uint32_t);
  void *task;
  uint32_t count;
  atomic_uint next;     /* the next task to take */
  atomic_uint finished; /* workers done with the job */
};

static void run_tasks(needle_threads_pool *pool) {
  for (uint32_t i; (i = atomic_fetch_add(&pool->next, 1)) < pool->count;)
    pool->fn(pool->task, i);
}

/* Waits for a generation other than `seen` (or stop): spins, then sleeps. */
static unsigned next_generation(needle_threads_pool *pool, unsigned seen) {
  for (int i = 0; i < kSpinPolls; ++i)
    if (atomic_load(&pool->generation) != seen || atomic_load(&pool->stop))
      return atomic_load(&pool->generation);
  mtx_lock(&pool->lock);
  atomic_fetch_add(&pool->sleepers, 1);
  while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
    cnd_wait(&pool->wake, &pool->lock);
  atomic_fetch_sub(&pool->sleepers, 1);
  mtx_unlock(&pool->lock);
  return atomic_load(&pool->generation);
}

static int worker(void *argument) {
  needle_threads_pool *pool = argument;
  for (unsigned seen = 0;;) {
    seen = next_generation(pool, seen);
    if (atomic_load(&pool->stop))
      return 0;
    run_tasks(pool);
    atomic_fetch_add(&pool->finished, 1);
  }
}

static void wake_sleepers(needle_threads_pool *pool) {
  if (!atomic_load(&pool->sleepers))
    return;
  mtx_lock(&pool->lock);
  cnd_broadcast(&pool->wake);
  mtx_unlock(&pool->lock);
}

void needle_threads_pool_parallel_for(void *p, void (*fn)(void *, uint32_t), void *task, uint32_t count) {
  needle_threads_pool *pool = p;
  pool->fn = fn;
  pool->task = task;
  pool->count = count;
  atomic_store(&pool->next, 0);
  atomic_store(&pool->finished, 0);
  atomic_fetch_add(&pool->generation, 1);
  wake_sleepers(pool);
  run_tasks(pool);
  while (atomic_load(&pool->finished) < pool->worker_count)
    ;
}

uint32_t needle_threads_pool_threads(const needle_threads_pool *pool) { return pool->worker_count + 1; }

void needle_threads_pool_destroy(needle_threads_pool *pool) {
  if (!pool)
    return;
  atomic_store(&pool->stop, 1);
  mtx_lock(&pool->lock);
  cnd_broadcast(&pool->wake);
  mtx_unlock(&pool->lock);
  for (uint32_t i = 0; i < pool->worker_count; ++i)
    thrd_join(pool->workers[i], NULL);
  cnd_destroy(&pool->wake);
  mtx_destroy(&pool->lock);
  free(pool->workers);
  free(pool);
}

needle_threads_pool *needle_threads_pool_create(uint32_t threads) {
  needle_threads_pool *pool = calloc(1, sizeof *pool);
  if (!pool)
    return NULL;
  const uint32_t workers = threads > 1 ? threads - 1 : 0;
  pool->workers = calloc(workers ? workers : 1, sizeof(thrd_t));
  const int locked = pool->workers && mtx_init(&pool->lock, mtx_plain) == thrd_success;
  if (!locked || cnd_init(&pool->wake) != thrd_success) {
    if (locked)
      mtx_destroy(&pool->lock);
    free(pool->workers);
    free(pool);
    return NULL;
  }
  for (; pool->worker_count < workers; ++pool->worker_count)
    if (thrd_create(&pool->workers[pool->worker_count], worker, pool) != thrd_success) {
      needle_threads_pool_destroy(pool);
      return NULL;
    }
  return pool;
}
