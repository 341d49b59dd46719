/* Feeds tokens 1, 2, 3 to both models and prints what each says: its depth, its session's length
 * and the argmax of its logits (install/package.test compares chat's with needle-run's); then
 * takes card's last two tokens back, as far as its MAX_ROLLBACK lets it. */
#include "card.h"
#include "chat.h"

#include <stdalign.h>
#include <stdio.h>

static alignas(64) unsigned char chat_arena[1 << 22];
static alignas(64) unsigned char card_arena[1 << 22];

static int argmax(const float *logits, unsigned count) {
  unsigned best = 0;
  for (unsigned i = 1; i < count; ++i)
    if (logits[i] > logits[best])
      best = i;
  return (int)best;
}

int main(void) {
  const int32_t tokens[] = {1, 2, 3};
  chat_session *chat = chat_open(chat_arena, sizeof chat_arena);
  card_session *card = card_open(card_arena, sizeof card_arena);
  if (!chat || !card || chat_feed(chat, tokens, 3) != NEEDLE_OK || card_feed(card, tokens, 3) != NEEDLE_OK) {
    fprintf(stderr, "product: a model failed\n");
    return 1;
  }
  printf("chat: %u blocks, max_seq_len %u, argmax %d\n", (unsigned)chat_info()->num_layers,
         (unsigned)chat_info()->max_seq_len, argmax(chat_logits(chat), chat_info()->vocab_size));
  printf("card: %u blocks, max_seq_len %u, argmax %d\n", (unsigned)card_info()->num_layers,
         (unsigned)card_info()->max_seq_len, argmax(card_logits(card), card_info()->vocab_size));
  const int truncated = card_truncate(card, 1);
  printf("card: max_rollback %u, truncate to 1: %d, position %u\n", (unsigned)card_info()->max_rollback, truncated,
         (unsigned)card_position(card));
  return 0;
}
