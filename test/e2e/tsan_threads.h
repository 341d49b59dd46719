/* ThreadSanitizer follows threads started and joined by pthread_create and pthread_join, which
 * it intercepts, but not by glibc's C11 thrd_create and thrd_join, which call glibc's internals
 * (a thread started so crashes in TSan's runtime). The TSan build of test/e2e/parallel.c
 * includes this first (-include): C11 threads then start and join through pthreads
 * (tsan_threads.c). Test-only; the example pool keeps plain <threads.h>. */
#ifndef NEEDLE_E2E_TSAN_THREADS_H
#define NEEDLE_E2E_TSAN_THREADS_H

#include <threads.h>

int tsan_thrd_create(thrd_t *thread, thrd_start_t start, void *argument);
int tsan_thrd_join(thrd_t thread, int *result);
#define thrd_create tsan_thrd_create
#define thrd_join tsan_thrd_join

#endif
