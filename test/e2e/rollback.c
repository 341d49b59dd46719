/* Taking tokens back (docs/c-interface.md, "Taking tokens back"): a session is fed random tokens
 * in random runs, truncated at random run boundaries as far back as the model keeps, and fed
 * again; after every truncate and every feed it must equal, bit for bit, a second session fed
 * only the kept tokens in the same runs (logits, confidence, embedding, position). Truncating
 * past what the model keeps, or past the position, must fail and change nothing.
 *
 *   rollback ROUNDS SEED
 *
 * Prints the model's max_rollback, a digest of the outputs after the first feeds (equal for every
 * --max-rollback: it does not change the numbers), then one line per check, "ok" or "FAIL".
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"

enum { kMaxTokens = 4096, kMaxRun = 6 };

typedef struct {
  unsigned char *arena;
  FN(_session) * s;
} session;

/* What a session shows: its logits, heads and position. */
typedef struct {
  float *logits, *embedding, confidence;
  size_t position;
} outputs;

static uint64_t rng;
static unsigned draw(unsigned below) {
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return (unsigned)(rng >> 33) % below;
}

static session open_session(void) {
  const size_t align = FN(_arena_align)(), size = (FN(_arena_size)() + align - 1) / align * align;
  session s = {aligned_alloc(align, size), NULL};
  s.s = s.arena ? FN(_open)(s.arena, size) : NULL;
  if (!s.s) {
    fprintf(stderr, "rollback: no session\n");
    exit(1);
  }
  return s;
}

static outputs read_outputs(const FN(_session) * s) {
  const FN(_info_t) *info = FN(_info)();
  outputs o = {malloc(info->vocab_size * sizeof(float)), calloc(info->embedding_dim + 1, sizeof(float)), 0, 0};
  memcpy(o.logits, FN(_logits)(s), info->vocab_size * sizeof(float));
  o.confidence = FN(_confidence)(s);
  if (FN(_embedding)(s, o.embedding) != NEEDLE_OK)
    o.embedding[0] = 1e30f;
  o.position = FN(_position)(s);
  return o;
}

static int same(outputs a, outputs b) {
  const FN(_info_t) *info = FN(_info)();
  const int equal = !memcmp(a.logits, b.logits, info->vocab_size * sizeof(float)) &&
                    !memcmp(&a.confidence, &b.confidence, sizeof a.confidence) &&
                    !memcmp(a.embedding, b.embedding, info->embedding_dim * sizeof(float)) &&
                    a.position == b.position;
  free(a.logits);
  free(a.embedding);
  free(b.logits);
  free(b.embedding);
  return equal;
}

static int logits_zero(const FN(_session) * s) {
  const float *logits = FN(_logits)(s);
  for (uint32_t i = 0; i < FN(_info)()->vocab_size; ++i)
    if (logits[i] != 0.0f)
      return 0;
  return 1;
}

static uint64_t digest(const FN(_session) * s) {
  outputs o = read_outputs(s);
  uint64_t h = 0xcbf29ce484222325u;
  const unsigned char *parts[] = {(const unsigned char *)o.logits, (const unsigned char *)&o.confidence,
                                  (const unsigned char *)o.embedding};
  const size_t sizes[] = {FN(_info)()->vocab_size * sizeof(float), sizeof(float),
                          FN(_info)()->embedding_dim * sizeof(float)};
  for (int p = 0; p < 3; ++p)
    for (size_t i = 0; i < sizes[p]; ++i)
      h = (h ^ parts[p][i]) * 0x100000001b3u;
  free(o.logits);
  free(o.embedding);
  return h;
}

/* The session's tokens and the runs they were fed in; runs[i] is where run i starts. */
static int32_t tokens[kMaxTokens];
static size_t runs[kMaxTokens], run_count, held, high_water;

/* Feeds a fresh session the kept tokens in their runs. */
static void replay(session *fresh) {
  FN(_reset)(fresh->s);
  for (size_t i = 0; i < run_count; ++i) {
    const size_t end = i + 1 < run_count ? runs[i + 1] : held;
    FN(_feed)(fresh->s, tokens + runs[i], end - runs[i]);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: rollback ROUNDS SEED\n");
    return 1;
  }
  const int rounds = atoi(argv[1]);
  rng = strtoull(argv[2], NULL, 10);
  const FN(_info_t) *info = FN(_info)();
  const size_t keep = info->max_rollback, room = info->max_seq_len < kMaxTokens ? info->max_seq_len : kMaxTokens;
  session a = open_session(), b = open_session();
  printf("max_rollback %zu\n", keep);
  int fed_alike = 1, truncated_alike = 1, zero_logits = 1, refused = 1, failures = 0;
  unsigned truncations = 0, feeds = 0;
  for (int round = 0; round < rounds; ++round) {
    for (unsigned r = 1 + draw(3); r > 0; --r) {
      const size_t n = 1 + draw(kMaxRun);
      if (held + n > room)
        break;
      runs[run_count++] = held;
      for (size_t i = 0; i < n; ++i)
        tokens[held + i] = (int32_t)draw(info->vocab_size);
      const int ok = FN(_feed)(a.s, tokens + held, n) == NEEDLE_OK && FN(_feed)(b.s, tokens + held, n) == NEEDLE_OK;
      held += n;
      high_water = held > high_water ? held : high_water;
      fed_alike &= ok && same(read_outputs(a.s), read_outputs(b.s));
      ++feeds;
    }
    if (round == 0)
      printf("digest %016llx\n", (unsigned long long)digest(a.s));
    /* Past what the model keeps (when there is such a position), and past the position: refused. */
    if (held > 0 && high_water > keep + 1) {
      outputs before = read_outputs(a.s);
      const size_t too_far = 1 + draw((unsigned)(high_water - keep - 1));
      refused &= FN(_truncate)(a.s, too_far) == NEEDLE_ERR_ARENA && same(before, read_outputs(a.s));
    }
    outputs before = read_outputs(a.s);
    refused &= FN(_truncate)(a.s, held + 1) == NEEDLE_ERR_ARG && same(before, read_outputs(a.s));
    /* Back to a run boundary the model keeps, chosen at random among them. */
    size_t choices[kMaxTokens], choice_count = 0;
    for (size_t i = 1; i < run_count; ++i)
      if (high_water - runs[i] <= keep)
        choices[choice_count++] = i;
    if (!choice_count)
      continue;
    run_count = choices[draw((unsigned)choice_count)];
    held = runs[run_count];
    const int ok = FN(_truncate)(a.s, held) == NEEDLE_OK;
    zero_logits &= logits_zero(a.s);
    replay(&b);
    /* b's logits are its last token's; a's are zero until its next feed: compare the rest. */
    outputs after = read_outputs(a.s), fresh = read_outputs(b.s);
    memcpy(after.logits, fresh.logits, info->vocab_size * sizeof(float));
    truncated_alike &= ok && same(after, fresh);
    ++truncations;
  }
  outputs before = read_outputs(a.s);
  const int unchanged = FN(_truncate)(a.s, held) == NEEDLE_OK && same(before, read_outputs(a.s));
  const int to_start = FN(_truncate)(a.s, 0) == NEEDLE_OK;
  FN(_reset)(b.s);
  const int as_fresh = to_start && same(read_outputs(a.s), read_outputs(b.s));
  const int not_session = FN(_truncate)(NULL, 0) == NEEDLE_ERR_ARG;

#define CHECK(what, ok)                                                                                           \
  do {                                                                                                            \
    printf("%s %s\n", (ok) ? "ok" : "FAIL", what);                                                                \
    failures += !(ok);                                                                                            \
  } while (0)
  CHECK("feeds equal a fresh session fed the kept tokens", fed_alike && feeds > 0);
  CHECK("truncates equal a fresh session fed the kept tokens", truncated_alike);
  CHECK("logits zero after a truncate", zero_logits);
  CHECK("truncating too far refused, nothing changed", refused);
  CHECK("truncating to the position changes nothing", unchanged);
  CHECK("truncating to 0 equals a fresh session", as_fresh);
  CHECK("not a session refused", not_session);
  printf("%s truncations\n", truncations > 0 ? "some" : "no");
  free(a.arena);
  free(b.arena);
  return failures != 0;
}
