/* needle_pthreadpool_parallel_for (pool_pthreadpool.h): pthreadpool's 1-D tasks take a size_t
 * index, the model's a uint32_t; a job on the caller's stack carries the model's task across. */
#include "pool_pthreadpool.h"

#include <pthreadpool.h>

struct job {
  void (*fn)(void *, uint32_t);
  void *task;
};

static void run_one(void *argument, size_t i) {
  const struct job *job = argument;
  job->fn(job->task, (uint32_t)i);
}

void needle_pthreadpool_parallel_for(void *pool, void (*fn)(void *, uint32_t), void *task, uint32_t count) {
  struct job job = {fn, task};
  pthreadpool_parallelize_1d((pthreadpool_t)pool, run_one, &job, count, 0);
}
