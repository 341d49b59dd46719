/* tsan_threads.h's C11 thread start and join on pthreads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

struct start {
  thrd_start_t start;
  void *argument;
};

static void *run(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  return (void *)(intptr_t)s.start(s.argument);
}

int tsan_thrd_create(thrd_t *thread, thrd_start_t start, void *argument) {
  struct start *s = malloc(sizeof *s);
  if (!s)
    return thrd_nomem;
  *s = (struct start){start, argument};
  if (pthread_create(thread, NULL, run, s) == 0)
    return thrd_success;
  free(s);
  return thrd_error;
}

int tsan_thrd_join(thrd_t thread, int *result) {
  void *value = NULL;
  if (pthread_join(thread, &value) != 0)
    return thrd_error;
  if (result)
    *result = (int)(intptr_t)value;
  return thrd_success;
}
