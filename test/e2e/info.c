/* Prints what a compiled model's NAME_info() says of its tokens, as a product reads it:
 *
 *   info
 *
 * prints "bos B eos E stops: S1 S2 ...". Built with -DNEEDLE_NAME=<--name>
 * -DNEEDLE_HEADER="<OUT.h>". C11. */
#include NEEDLE_HEADER

#include <stdio.h>

#include "model_name.h"

int main(void) {
  const CAT(NEEDLE_NAME, _info_t) *info = FN(_info)();
  printf("bos %ld eos %ld stops:", (long)info->bos_id, (long)info->eos_id);
  if (info->stop_count > 0 && !info->stop_ids) {
    printf(" NULL with a count of %lu\n", (unsigned long)info->stop_count);
    return 1;
  }
  for (uint32_t i = 0; i < info->stop_count; ++i)
    printf(" %ld", (long)info->stop_ids[i]);
  printf("%s\n", info->stop_count == 0 && info->stop_ids ? " (a pointer with no ids)" : "");
  return 0;
}
