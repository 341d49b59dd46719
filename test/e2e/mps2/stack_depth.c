/* The deepest stack NAME_feed reaches, measured by painting: fill the stack below main's frame
 * with a mark, feed max_seq_len tokens (one call of many, then one at a time), and find the
 * lowest byte the feeds overwrote. Prints "NAME_feed stack: N bytes" (N counted from main's frame,
 * so it includes the call's own frame; within the GAP bytes of slack, a small overcount).
 *   stack_depth   exit 0, or 1 when the feeds reached the bottom of the painted area
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>", for a target without an OS. */
#include NEEDLE_HEADER

#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "../model_name.h"
#define STR2(x) #x
#define STR(x) STR2(x)

enum { PAINTED = 65536, GAP = 512, MARK = 0xA5 };

/* Paints [top - GAP - PAINTED, top - GAP): below this call's frame and memset's, which live in
 * the GAP bytes under main's. */
__attribute__((noinline)) static unsigned char *paint(unsigned char *top) {
  unsigned char *bottom = top - GAP - PAINTED;
  memset(bottom, MARK, PAINTED);
  return bottom;
}

int main(void) {
  const CAT(NEEDLE_NAME, _info_t) *info = FN(_info)();
  const size_t size = FN(_arena_size)();
  void *arena = memalign(FN(_arena_align)(), size);
  CAT(NEEDLE_NAME, _session) *s = arena ? FN(_open)(arena, size) : NULL;
  if (!s) {
    fprintf(stderr, "stack_depth: no session\n");
    return 1;
  }
  int32_t tokens[64];
  const size_t half = info->max_seq_len / 2 < 64 ? info->max_seq_len / 2 : 64;
  for (size_t i = 0; i < half; ++i)
    tokens[i] = (int32_t)((i * 7919u + 3u) % info->vocab_size);

  unsigned char *top = __builtin_frame_address(0);
  const unsigned char *bottom = paint(top);
  int status = FN(_feed)(s, tokens, half);
  for (size_t i = 0; i < half && status == NEEDLE_OK; ++i)
    status = FN(_feed)(s, tokens + i, 1);
  if (status != NEEDLE_OK) {
    fprintf(stderr, "stack_depth: feed returned %d\n", status);
    return 1;
  }
  size_t untouched = 0;
  while (untouched < PAINTED && bottom[untouched] == MARK)
    ++untouched;
  printf("%s_feed stack: %lu bytes\n", STR(NEEDLE_NAME), (unsigned long)(GAP + PAINTED - untouched));
  return untouched == 0;
}
