/* Every rung in one object (docs/c-interface.md, "Every rung in one object"). For each depth the
 * object holds, a session opened at it is fed the same tokens in the same runs, and a digest of
 * its outputs (logits, confidence, embedding) after every feed is printed: an object of several
 * rungs must print, for each depth, the lines the one-rung object compiled with --layers D
 * prints (check_rungs.py compares them). Then the checks of the functions themselves, one line
 * each, "ok" or "FAIL":
 *   - the sizes: NAME_arena_size() is the deepest rung's, 0 outside the range, and a shallower
 *     rung needs no more than a deeper one;
 *   - NAME_open_depth refuses a depth outside the range and a too small arena; NAME_open opens
 *     the deepest; NAME_depth names the depth, 0 for what is not a session;
 *   - a header whose depth names another rung is refused (the session is not one);
 *   - NAME_reopen_depth to every depth equals a session opened there and fed the held tokens in
 *     one feed, bit for bit, and goes on equal after one more feed; to its own depth it changes
 *     nothing; to a depth outside the range (NEEDLE_ERR_ARG) or one the arena is too small for
 *     (NEEDLE_ERR_ARENA) it fails and changes nothing.
 *
 *   rungs TOKENS SEED
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"

enum { kMaxTokens = 512, kMaxRun = 5 };

static uint64_t rng;
static unsigned draw(unsigned below) {
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return (unsigned)(rng >> 33) % below;
}

/* A session at `depth` in an arena of its own, `extra` bytes larger than the depth needs. */
typedef struct {
  unsigned char *arena;
  FN(_session) * s;
} session;

static session open_at(uint32_t depth, size_t extra) {
  const size_t align = FN(_arena_align)(), size = FN(_arena_size_depth)(depth) + extra;
  session s = {aligned_alloc(align, (size + align - 1) / align * align), NULL};
  s.s = s.arena ? FN(_open_depth)(s.arena, size, depth) : NULL;
  if (!s.s) {
    fprintf(stderr, "rungs: no session at depth %u\n", depth);
    exit(1);
  }
  return s;
}

/* FNV-1a over the session's logits, confidence, embedding and position. */
static uint64_t digest(const FN(_session) * s) {
  const FN(_info_t) *info = FN(_info)();
  uint64_t h = 0xcbf29ce484222325u;
  const float *logits = FN(_logits)(s);
  float confidence = FN(_confidence)(s), *embedding = calloc(info->embedding_dim, sizeof(float));
  const size_t position = FN(_position)(s);
  if (!logits || !embedding || FN(_embedding)(s, embedding) != NEEDLE_OK) {
    free(embedding);
    return 0;
  }
  const unsigned char *parts[] = {(const unsigned char *)logits, (const unsigned char *)&confidence,
                                  (const unsigned char *)embedding, (const unsigned char *)&position};
  const size_t sizes[] = {info->vocab_size * sizeof(float), sizeof confidence, info->embedding_dim * sizeof(float),
                          sizeof position};
  for (int p = 0; p < 4; ++p)
    for (size_t i = 0; i < sizes[p]; ++i)
      h = (h ^ parts[p][i]) * 0x100000001b3u;
  free(embedding);
  return h;
}

static int32_t tokens[kMaxTokens];
static size_t runs[kMaxTokens + 1], run_count, held;

/* The tokens and the runs every depth is fed. */
static void draw_tokens(size_t count) {
  const FN(_info_t) *info = FN(_info)();
  held = count < info->max_seq_len ? count : info->max_seq_len;
  for (size_t i = 0; i < held; ++i)
    tokens[i] = (int32_t)draw(info->vocab_size);
  for (size_t at = 0; at < held; at += 1 + draw(kMaxRun))
    runs[run_count++] = at;
  runs[run_count] = held;
}

static int failures;
static void check(const char *what, int ok) {
  printf("%s %s\n", ok ? "ok" : "FAIL", what);
  failures += !ok;
}

static void check_sizes(const FN(_info_t) * info) {
  int sizes = FN(_arena_size)() == FN(_arena_size_depth)(info->max_depth) &&
              FN(_arena_size_depth)(info->min_depth - 1) == 0 && FN(_arena_size_depth)(info->max_depth + 1) == 0 &&
              FN(_arena_size_depth)(0) == 0 && info->num_layers == info->max_depth &&
              info->min_depth <= info->max_depth;
  for (uint32_t d = info->min_depth; d < info->max_depth; ++d)
    sizes &= FN(_arena_size_depth)(d) <= FN(_arena_size_depth)(d + 1);
  check("arena sizes by depth", sizes);

  const size_t align = FN(_arena_align)(), room = FN(_arena_size)() + align;
  unsigned char *arena = aligned_alloc(align, (room + align - 1) / align * align);
  int opens = FN(_open_depth)(arena, room, info->min_depth - 1) == NULL &&
              FN(_open_depth)(arena, room, info->max_depth + 1) == NULL && FN(_depth)(NULL) == 0;
  for (uint32_t d = info->min_depth; d <= info->max_depth; ++d) {
    opens &= FN(_open_depth)(arena, FN(_arena_size_depth)(d) - 1, d) == NULL;
    const FN(_session) *s = FN(_open_depth)(arena, FN(_arena_size_depth)(d), d);
    opens &= s != NULL && FN(_depth)(s) == d;
  }
  const FN(_session) *deepest = FN(_open)(arena, room);
  opens &= deepest != NULL && FN(_depth)(deepest) == info->max_depth;
  check("open_depth and depth", opens);

  /* The depth the header names (an int32_t after the position, the tag, the high-water mark and the
   * call probability: needle_rt::SessionHeader) overwritten with another rung's. */
  if (info->min_depth < info->max_depth) {
    int32_t other = (int32_t)info->min_depth;
    memcpy(arena + 28, &other, sizeof other);
    check("a header naming another depth is refused",
          FN(_depth)(deepest) == 0 && FN(_logits)(deepest) == NULL && FN(_position)(deepest) == 0);
  }
  free(arena);
}

/* Reopening `from` at `to` equals a session opened at `to` and fed the tokens in one feed. */
static int reopens_alike(uint32_t from, uint32_t to) {
  session a = open_at(from, FN(_arena_size)()), b = open_at(to, 0);
  int ok = FN(_feed)(a.s, tokens, held) == NEEDLE_OK && FN(_reopen_depth)(a.s, to) == NEEDLE_OK &&
           FN(_depth)(a.s) == to && FN(_feed)(b.s, tokens, held) == NEEDLE_OK && digest(a.s) == digest(b.s);
  const int32_t more = tokens[0];
  ok &= FN(_feed)(a.s, &more, 1) == NEEDLE_OK && FN(_feed)(b.s, &more, 1) == NEEDLE_OK && digest(a.s) == digest(b.s);
  free(a.arena);
  free(b.arena);
  return ok;
}

static void check_reopen(const FN(_info_t) * info) {
  int alike = 1;
  for (uint32_t from = info->min_depth; from <= info->max_depth; ++from)
    alike &= reopens_alike(from, info->min_depth + draw(info->max_depth - info->min_depth + 1));
  check("reopen_depth equals a session opened there", alike);

  session s = open_at(info->min_depth, 0);
  FN(_feed)(s.s, tokens, held);
  const uint64_t before = digest(s.s);
  int refused = FN(_reopen_depth)(s.s, info->min_depth) == NEEDLE_OK && digest(s.s) == before &&
                FN(_reopen_depth)(s.s, info->max_depth + 1) == NEEDLE_ERR_ARG && digest(s.s) == before &&
                FN(_reopen_depth)(NULL, info->min_depth) == NEEDLE_ERR_ARG;
  if (FN(_arena_size_depth)(info->max_depth) > FN(_arena_size_depth)(info->min_depth))
    refused &= FN(_reopen_depth)(s.s, info->max_depth) == NEEDLE_ERR_ARENA && digest(s.s) == before &&
               FN(_depth)(s.s) == info->min_depth;
  check("reopen_depth refusals change nothing", refused);
  free(s.arena);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: rungs TOKENS SEED\n");
    return 1;
  }
  rng = strtoull(argv[2], NULL, 10);
  const FN(_info_t) *info = FN(_info)();
  draw_tokens((size_t)atoi(argv[1]) < kMaxTokens ? (size_t)atoi(argv[1]) : kMaxTokens);
  printf("depths %u..%u\n", info->min_depth, info->max_depth);
  for (uint32_t d = info->min_depth; d <= info->max_depth; ++d) {
    session s = open_at(d, 0);
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t r = 0; r < run_count; ++r) {
      const int status = FN(_feed)(s.s, tokens + runs[r], runs[r + 1] - runs[r]);
      h = (h ^ (status == NEEDLE_OK ? digest(s.s) : 0)) * 0x100000001b3u;
    }
    printf("depth %u digest %016llx\n", d, (unsigned long long)h);
    free(s.arena);
  }
  check_sizes(info);
  check_reopen(info);
  return failures != 0;
}
