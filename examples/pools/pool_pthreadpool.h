/* A compiled Needle model's session on a pthreadpool (Debian's libpthreadpool-dev, the pool
 * XNNPACK uses; docs/c-interface.md, "Every core: a pool lent by the product"):
 *
 *   pthreadpool_t pool = pthreadpool_create(0);   (0: one thread per core, the caller's included)
 *   needle_parallel p = {needle_pthreadpool_parallel_for, pool, (uint32_t)pthreadpool_get_threads_count(pool)};
 *   model_set_parallel(session, &p);
 *
 * Link with -lpthreadpool. */
#ifndef NEEDLE_POOL_PTHREADPOOL_H
#define NEEDLE_POOL_PTHREADPOOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* needle_parallel's parallel_for on the pthreadpool_t `pool`, through pthreadpool_parallelize_1d. */
void needle_pthreadpool_parallel_for(void *pool, void (*fn)(void *task, uint32_t i), void *task, uint32_t count);

#ifdef __cplusplus
}
#endif

#endif
