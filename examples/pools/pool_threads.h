/* A minimal thread pool on C11 <threads.h> that a compiled Needle model's session can borrow
 * (docs/c-interface.md, "Every core: a pool lent by the product"):
 *
 *   needle_threads_pool *pool = needle_threads_pool_create(4);   (4 threads, the caller's included)
 *   needle_parallel p = {needle_threads_pool_parallel_for, pool, needle_threads_pool_threads(pool)};
 *   model_set_parallel(session, &p);
 *   ...
 *   needle_threads_pool_destroy(pool);   (once no session uses it)
 *
 * Its workers spin for a while after each job before they sleep, so the many short jobs of a
 * decode step do not each pay a wake-up. One job at a time: a pool serves one session, or
 * sessions fed from one thread. */
#ifndef NEEDLE_THREADS_POOL_H
#define NEEDLE_THREADS_POOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct needle_threads_pool needle_threads_pool;

/* A pool running jobs on `threads` threads, the calling one included (threads - 1 workers);
 * NULL when a thread cannot be started or memory is short. */
needle_threads_pool *needle_threads_pool_create(uint32_t threads);
uint32_t needle_threads_pool_threads(const needle_threads_pool *pool);
/* needle_parallel's parallel_for: fn(task, i) for every i in [0, count), then returns. */
void needle_threads_pool_parallel_for(void *pool, void (*fn)(void *task, uint32_t i), void *task, uint32_t count);
void needle_threads_pool_destroy(needle_threads_pool *pool);

#ifdef __cplusplus
}
#endif

#endif
