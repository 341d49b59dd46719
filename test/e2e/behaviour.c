/* The runtime behaviour docs/c-interface.md promises, checked on a compiled model through its C
 * interface. Every comparison is bit for bit against a second, reference session (or a fresh
 * one) unless a check says otherwise; each difference is printed and makes the program exit 1.
 *
 *   behaviour [CHECK...]     run the named checks (all of them when none is named):
 *     feeding     one by one, all at once and in chunks agree, at every position
 *     errors      NEEDLE_ERR_TOKEN and NEEDLE_ERR_FULL leave the session exactly as it was
 *     reset       reset forgets everything: the session equals a fresh one
 *     arguments   open refuses NULL, too small and misaligned arenas; NULL arguments; n = 0
 *     initial     the outputs before any token (zero logits and embedding, σ(bias))
 *     misuse      never-opened and corrupted arenas are refused, so are buffers inside the arena
 *     threads     two sessions on two threads at once equal the same streams fed sequentially
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>" (and -DNEEDLE_PAD_TOKEN=<the
 * model's pad_token_id> unless it is 0), C11 and pthreads. Each arena is filled with its own byte
 * pattern before open, since any memory must do; the bytes past arena_size() are poisoned under
 * AddressSanitizer, so a session that touches memory past its arena is caught. */
#define _POSIX_C_SOURCE 200809L

#include NEEDLE_HEADER

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#ifndef NEEDLE_PAD_TOKEN
#define NEEDLE_PAD_TOKEN 0
#endif

#include "model_name.h"

typedef CAT(NEEDLE_NAME, _session) session;
typedef CAT(NEEDLE_NAME, _info_t) info_t;

static size_t vocab, emb_dim, max_seq, arena_size, arena_align;
static const char *check = ""; /* the running check, for messages */
static int failures;           /* of the running check */

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...) {
  if (++failures > 40) /* the first 40 differences of a check tell the story */
    return;
  va_list args;
  va_start(args, fmt);
  printf("FAIL %s: ", check);
  vprintf(fmt, args);
  printf("\n");
  va_end(args);
}

static void die(const char *what) {
  printf("FATAL %s: %s\n", check, what);
  fflush(stdout);
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    die("out of memory");
  return p;
}

/* A formatted message, in one of 4 buffers used in turn (so one label may format another). */
static const char *label(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *label(const char *fmt, ...) {
  static char buffers[4][256];
  static unsigned next;
  char *buf = buffers[next++ % 4];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof buffers[0], fmt, args);
  va_end(args);
  return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* Arenas and sessions                                                                         */
/* ------------------------------------------------------------------------------------------ */

static size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

/* Room for `count` arenas back to back, each arena_size() rounded up to the alignment, filled
 * with `pattern`; the bytes past arena_size() in each room are poisoned. */
typedef struct {
  unsigned char *base;
  size_t room, count;
} block_t;

static block_t block_new(size_t count, unsigned char pattern) {
  block_t b = {NULL, round_up(arena_size, arena_align), count};
  b.base = aligned_alloc(arena_align, b.room * count);
  if (!b.base)
    die("aligned_alloc failed");
  memset(b.base, pattern, b.room * count);
  for (size_t i = 0; i < count; ++i)
    POISON(b.base + i * b.room + arena_size, b.room - arena_size);
  return b;
}

static void block_free(block_t *b) {
  UNPOISON(b->base, b->room * b->count);
  free(b->base);
  b->base = NULL;
}

static session *open_at(block_t *b, size_t i) {
  session *s = FN(_open)(b->base + i * b->room, arena_size);
  if (!s)
    die("open failed on a good arena");
  return s;
}

/* A session just opened in its own arena (filled with `pattern` first). */
typedef struct {
  block_t block;
  session *s;
} fresh_t;

static fresh_t fresh(unsigned char pattern) {
  fresh_t f;
  f.block = block_new(1, pattern);
  f.s = open_at(&f.block, 0);
  return f;
}

static void fresh_free(fresh_t *f) { block_free(&f->block); }

static void feed_ok(const char *what, session *s, const int32_t *tokens, size_t n) {
  const int status = FN(_feed)(s, tokens, n);
  if (status != NEEDLE_OK) {
    failf("%s: feeding %zu tokens returned %d, expected NEEDLE_OK", what, n, status);
    die("cannot continue");
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Snapshots of what a session shows, compared bit for bit                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
  size_t position;
  float confidence;
  int embedding_status;
  float *logits, *embedding; /* vocab and emb_dim floats */
} snap_t;

static snap_t snap_of(const session *s) {
  snap_t out;
  out.position = FN(_position)(s);
  out.confidence = FN(_confidence)(s);
  out.logits = xmalloc(vocab * sizeof(float));
  out.embedding = xmalloc(emb_dim * sizeof(float));
  const float *logits = FN(_logits)(s);
  if (!logits)
    die("logits returned NULL for a session");
  memcpy(out.logits, logits, vocab * sizeof(float));
  out.embedding_status = FN(_embedding)(s, out.embedding);
  return out;
}

static void snap_free(snap_t *s) {
  free(s->logits);
  free(s->embedding);
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Compares n floats bit for bit. With tolerance > 0, a difference of at most tolerance times the
 * largest |want| (close.py's measure) is accepted, and the largest such kept in *max_rel. Prints
 * the first differences beyond that and returns how many there are. */
static size_t compare_floats(const char *what, const char *name, const float *got, const float *want, size_t n,
                             double tolerance, double *max_rel) {
  double scale = 1e-30;
  for (size_t i = 0; i < n; ++i)
    scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (bits(got[i]) == bits(want[i]))
      continue;
    const double rel = fabs((double)got[i] - (double)want[i]) / scale;
    if (tolerance > 0.0 && rel <= tolerance) {
      *max_rel = rel > *max_rel ? rel : *max_rel;
      continue;
    }
    if (bad++ < 4)
      failf("%s: %s[%zu] = %.9g (0x%08x), expected %.9g (0x%08x)", what, name, i, got[i], (unsigned)bits(got[i]),
            want[i], (unsigned)bits(want[i]));
  }
  if (bad > 4)
    failf("%s: %zu of %zu %s values differ", what, bad, n, name);
  return bad;
}

/* Everything a session shows against `want`: 1 when all agree bit for bit, 0 when they agree
 * only within the tolerance (the largest relative difference goes to *max_rel), -1 (printed)
 * when they differ. */
static int compare_snaps(const char *what, const snap_t *got, const snap_t *want, double tolerance, double *max_rel) {
  const int before = failures;
  double rel = 0.0;
  if (got->position != want->position)
    failf("%s: position %zu, expected %zu", what, got->position, want->position);
  if (got->embedding_status != want->embedding_status)
    failf("%s: embedding returned %d, expected %d", what, got->embedding_status, want->embedding_status);
  compare_floats(what, "logits", got->logits, want->logits, vocab, tolerance, &rel);
  compare_floats(what, "embedding", got->embedding, want->embedding, emb_dim, tolerance, &rel);
  compare_floats(what, "confidence", &got->confidence, &want->confidence, 1, tolerance, &rel);
  if (max_rel && rel > *max_rel)
    *max_rel = rel;
  return failures != before ? -1 : rel == 0.0 ? 1 : 0;
}

/* The session shows exactly `want`. */
static int same(const char *what, const session *s, const snap_t *want) {
  snap_t got = snap_of(s);
  const int r = compare_snaps(what, &got, want, 0.0, NULL);
  snap_free(&got);
  return r == 1;
}

/* Two sessions show exactly the same. */
static int same_sessions(const char *what, const session *s, const session *reference) {
  snap_t want = snap_of(reference);
  const int r = same(what, s, &want);
  snap_free(&want);
  return r;
}

/* Outputs that mean something, so that agreeing is not vacuous: finite logits that are not all
 * zero, a probability, a unit embedding. */
static void plausible(const char *what, const snap_t *got) {
  size_t nonzero = 0;
  for (size_t i = 0; i < vocab; ++i) {
    if (!isfinite(got->logits[i])) {
      failf("%s: logits[%zu] = %g is not finite", what, i, got->logits[i]);
      return;
    }
    nonzero += got->logits[i] != 0.0f;
  }
  if (!nonzero)
    failf("%s: every logit is zero", what);
  if (!(got->confidence > 0.0f && got->confidence < 1.0f))
    failf("%s: confidence %g is not in (0, 1)", what, got->confidence);
  double norm = 0.0;
  for (size_t i = 0; i < emb_dim; ++i)
    norm += (double)got->embedding[i] * got->embedding[i];
  if (got->embedding_status != NEEDLE_OK || fabs(sqrt(norm) - 1.0) > 1e-3)
    failf("%s: embedding returned %d with norm %g, expected NEEDLE_OK and 1", what, got->embedding_status, sqrt(norm));
}

/* ------------------------------------------------------------------------------------------ */
/* Token streams and reference runs                                                            */
/* ------------------------------------------------------------------------------------------ */

/* A deterministic stream of max_seq tokens in [0, vocab); stream 0 holds a pad token at 3. */
static int32_t *stream(unsigned seed) {
  int32_t *t = xmalloc(max_seq * sizeof(int32_t));
  uint32_t x = 2166136261u ^ (seed * 16777619u);
  for (size_t i = 0; i < max_seq; ++i) {
    x = x * 1664525u + 1013904223u;
    t[i] = (int32_t)((x >> 8) % vocab);
  }
  if (seed == 0 && max_seq > 3)
    t[3] = NEEDLE_PAD_TOKEN;
  return t;
}

/* Snapshots of a fresh session fed `tokens` one by one: out[k] after k + 1 tokens. */
static snap_t *reference_run(const int32_t *tokens, size_t n, unsigned char pattern) {
  fresh_t f = fresh(pattern);
  snap_t *out = xmalloc(n * sizeof(snap_t));
  for (size_t k = 0; k < n; ++k) {
    feed_ok("reference", f.s, tokens + k, 1);
    out[k] = snap_of(f.s);
  }
  fresh_free(&f);
  return out;
}

static void snaps_free(snap_t *snaps, size_t n) {
  for (size_t k = 0; k < n; ++k)
    snap_free(&snaps[k]);
  free(snaps);
}

/* ------------------------------------------------------------------------------------------ */
/* 1. One by one, all at once, in chunks                                                        */
/* ------------------------------------------------------------------------------------------ */

static void check_feeding(void) {
  int32_t *tokens = stream(0);
  snap_t *one = reference_run(tokens, max_seq, 0x11);
  for (size_t k = 0; k < max_seq; ++k)
    plausible(label("one by one, %zu tokens", k + 1), &one[k]);

  /* Every prefix all at once, in a re-filled arena, against one by one. */
  size_t comparisons = 0, exact = 0;
  double max_rel = 0.0;
  block_t b = block_new(1, 0x22);
  for (size_t k = 1; k <= max_seq; ++k) {
    UNPOISON(b.base, arena_size);
    memset(b.base, (int)(0x22 + k), arena_size);
    session *s = open_at(&b, 0);
    feed_ok("all at once", s, tokens, k);
    snap_t got = snap_of(s);
    const int r = compare_snaps(label("%zu tokens all at once", k), &got, &one[k - 1], 1e-6, &max_rel);
    comparisons += 1, exact += r == 1;
    snap_free(&got);
  }
  /* The whole stream in chunks of 2, 3, 5 and 7 tokens, compared after each chunk. */
  for (size_t chunk = 2; chunk <= 7; chunk += chunk == 2 ? 1 : 2) {
    session *s = open_at(&b, 0);
    for (size_t done = 0; done < max_seq;) {
      const size_t n = max_seq - done < chunk ? max_seq - done : chunk;
      feed_ok("chunks", s, tokens + done, n);
      done += n;
      snap_t got = snap_of(s);
      const int r =
          compare_snaps(label("chunks of %zu, %zu tokens", chunk, done), &got, &one[done - 1], 1e-6, &max_rel);
      comparisons += 1, exact += r == 1;
      snap_free(&got);
    }
  }
  block_free(&b);
  if (exact == comparisons)
    printf("feeding: %zu comparisons with one by one, all bit-exact\n", comparisons);
  else
    printf("feeding: %zu of %zu comparisons bit-exact, the others within 1e-6 (largest relative difference %.3g)\n",
           exact, comparisons, max_rel);
  snaps_free(one, max_seq);
  free(tokens);
}

/* ------------------------------------------------------------------------------------------ */
/* 2. Errors leave the session exactly as it was                                               */
/* ------------------------------------------------------------------------------------------ */

/* Feeds `tokens` expecting `expected`, then checks the session shows what it showed before. */
static void refused(const char *what, session *s, const int32_t *tokens, size_t n, int expected) {
  snap_t before = snap_of(s);
  const int status = FN(_feed)(s, tokens, n);
  if (status != expected)
    failf("%s: feed returned %d, expected %d", what, status, expected);
  same(what, s, &before);
  snap_free(&before);
}

/* The bad feeds of NEEDLE_ERR_TOKEN at the session's position. */
static void bad_tokens(const char *where_label, session *s, const int32_t *good) {
  char where[128];
  snprintf(where, sizeof where, "%s", where_label);
  const int32_t v = (int32_t)vocab;
  const int32_t negative[] = {-1}, at_vocab[] = {v}, last[] = {good[0], good[1], v}, middle[] = {good[0], -1, good[1]},
                lowest[] = {INT32_MIN}, highest[] = {INT32_MAX}, first[] = {v, good[0]};
  refused(label("%s, token -1", where), s, negative, 1, NEEDLE_ERR_TOKEN);
  refused(label("%s, token vocab_size", where), s, at_vocab, 1, NEEDLE_ERR_TOKEN);
  refused(label("%s, vocab_size last of 3", where), s, last, 3, NEEDLE_ERR_TOKEN);
  refused(label("%s, -1 second of 3", where), s, middle, 3, NEEDLE_ERR_TOKEN);
  refused(label("%s, vocab_size first of 2", where), s, first, 2, NEEDLE_ERR_TOKEN);
  refused(label("%s, INT32_MIN", where), s, lowest, 1, NEEDLE_ERR_TOKEN);
  refused(label("%s, INT32_MAX", where), s, highest, 1, NEEDLE_ERR_TOKEN);
  /* Too many tokens and a bad one (the last): the token error wins. */
  int32_t *many = xmalloc((max_seq + 1) * sizeof(int32_t));
  for (size_t i = 0; i < max_seq; ++i)
    many[i] = good[i % 2];
  many[max_seq] = v;
  refused(label("%s, max_seq + 1 tokens, the last vocab_size", where), s, many, max_seq + 1, NEEDLE_ERR_TOKEN);
  free(many);
}

static void check_errors(void) {
  int32_t *tokens = stream(1);
  const size_t prefix = 5;

  /* NEEDLE_ERR_TOKEN at a few positions; the later outputs equal a session that never saw them. */
  fresh_t t = fresh(0x31), r = fresh(0x32);
  feed_ok("prefix", t.s, tokens, prefix);
  feed_ok("prefix", r.s, tokens, prefix);
  bad_tokens(label("after %zu tokens", prefix), t.s, tokens);
  for (size_t i = prefix; i < max_seq - 4; ++i) {
    feed_ok("later", t.s, tokens + i, 1);
    feed_ok("later", r.s, tokens + i, 1);
    same_sessions(label("token errors, then %zu tokens", i + 1), t.s, r.s);
    if (i % 4 == 0)
      bad_tokens(label("after %zu tokens", i + 1), t.s, tokens + i);
  }
  fresh_free(&t);
  fresh_free(&r);

  /* NEEDLE_ERR_FULL: max_seq - 4 tokens, then 5 (or max_seq) are refused; 4 fit, one by one. */
  fresh_t u = fresh(0x33), w = fresh(0x34);
  const size_t held = max_seq - 4;
  feed_ok("prefix", u.s, tokens, held);
  feed_ok("prefix", w.s, tokens, held);
  refused(label("%zu tokens, then 5", held), u.s, tokens + held - 1, 5, NEEDLE_ERR_FULL);
  refused(label("%zu tokens, then max_seq", held), u.s, tokens, max_seq, NEEDLE_ERR_FULL);
  for (size_t i = held; i < max_seq; ++i) {
    feed_ok("later", u.s, tokens + i, 1);
    feed_ok("later", w.s, tokens + i, 1);
    same_sessions(label("after the full error, %zu tokens", i + 1), u.s, w.s);
    if (i + 1 < max_seq)
      refused(label("%zu tokens, then %zu", i + 1, max_seq - i), u.s, tokens, max_seq - i, NEEDLE_ERR_FULL);
  }
  if (FN(_position)(u.s) != max_seq)
    failf("position %zu after max_seq_len tokens", FN(_position)(u.s));
  refused("full, then 1", u.s, tokens, 1, NEEDLE_ERR_FULL);
  refused("full, then 0", u.s, tokens, 0, NEEDLE_OK);
  refused("full, then a bad token", u.s, (const int32_t[]){-1}, 1, NEEDLE_ERR_TOKEN);
  same_sessions("full, after the refused feeds", u.s, w.s);
  fresh_free(&u);
  fresh_free(&w);
  free(tokens);
}

/* ------------------------------------------------------------------------------------------ */
/* 3. Reset                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* After reset: position 0, zero logits and embedding, the fresh session's confidence. */
static void like_fresh(const char *what, const session *s, const snap_t *fresh_snap) {
  snap_t got = snap_of(s);
  if (got.position != 0)
    failf("%s: position %zu, expected 0", what, got.position);
  for (size_t i = 0; i < vocab; ++i)
    if (got.logits[i] != 0.0f) {
      failf("%s: logits[%zu] = %.9g, expected 0", what, i, got.logits[i]);
      break;
    }
  for (size_t i = 0; i < emb_dim; ++i)
    if (got.embedding[i] != 0.0f) {
      failf("%s: embedding[%zu] = %.9g, expected 0", what, i, got.embedding[i]);
      break;
    }
  compare_snaps(what, &got, fresh_snap, 0.0, NULL);
  snap_free(&got);
}

static void check_reset(void) {
  fresh_t f = fresh(0x41);
  snap_t initial = snap_of(f.s);
  int32_t *first = stream(3), *second = stream(4), *third = stream(5);
  snap_t *want = reference_run(second, max_seq, 0x42);

  /* A full session (every ring wrapped), reset, fed another stream one by one. */
  fresh_t s = fresh(0x43);
  feed_ok("first stream", s.s, first, max_seq);
  FN(_reset)(s.s);
  like_fresh("reset after max_seq tokens", s.s, &initial);
  for (size_t k = 0; k < max_seq; ++k) {
    feed_ok("second stream", s.s, second + k, 1);
    snap_t got = snap_of(s.s);
    compare_snaps(label("reset, then %zu tokens", k + 1), &got, &want[k], 0.0, NULL);
    snap_free(&got);
  }

  /* Part of a stream (not a multiple of any window), reset twice, then a batch, against a fresh
   * session fed the same batch. */
  FN(_reset)(s.s);
  feed_ok("third stream", s.s, third, 13 < max_seq ? 13 : max_seq);
  FN(_reset)(s.s);
  FN(_reset)(s.s);
  like_fresh("reset twice after 13 tokens", s.s, &initial);
  fresh_t r = fresh(0x44);
  feed_ok("batch", s.s, second, max_seq - 1);
  feed_ok("batch", r.s, second, max_seq - 1);
  same_sessions("reset, then a batch", s.s, r.s);

  /* Reset of a fresh session changes nothing. */
  FN(_reset)(f.s);
  like_fresh("reset of a fresh session", f.s, &initial);

  fresh_free(&r);
  fresh_free(&s);
  fresh_free(&f);
  snaps_free(want, max_seq);
  snap_free(&initial);
  free(first);
  free(second);
  free(third);
}

/* ------------------------------------------------------------------------------------------ */
/* 4. Arguments                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static void bad_arguments(const char *where_label, session *s, const int32_t *tokens) {
  char where[128];
  snprintf(where, sizeof where, "%s", where_label);
  snap_t before = snap_of(s);
  int status;
  if ((status = FN(_feed)(NULL, tokens, 1)) != NEEDLE_ERR_ARG)
    failf("%s: feed(NULL, tokens, 1) returned %d, expected NEEDLE_ERR_ARG", where, status);
  if ((status = FN(_feed)(NULL, tokens, 0)) != NEEDLE_ERR_ARG)
    failf("%s: feed(NULL, tokens, 0) returned %d, expected NEEDLE_ERR_ARG", where, status);
  if ((status = FN(_feed)(NULL, NULL, 0)) != NEEDLE_ERR_ARG)
    failf("%s: feed(NULL, NULL, 0) returned %d, expected NEEDLE_ERR_ARG", where, status);
  if ((status = FN(_feed)(s, NULL, 1)) != NEEDLE_ERR_ARG)
    failf("%s: feed(s, NULL, 1) returned %d, expected NEEDLE_ERR_ARG", where, status);
  if ((status = FN(_feed)(s, NULL, 3)) != NEEDLE_ERR_ARG)
    failf("%s: feed(s, NULL, 3) returned %d, expected NEEDLE_ERR_ARG", where, status);
  same(label("%s, after the NULL feeds", where), s, &before);
  if ((status = FN(_feed)(s, NULL, 0)) != NEEDLE_OK)
    failf("%s: feed(s, NULL, 0) returned %d, expected NEEDLE_OK", where, status);
  same(label("%s, after feed(s, NULL, 0)", where), s, &before);
  if ((status = FN(_feed)(s, tokens, 0)) != NEEDLE_OK)
    failf("%s: feed(s, tokens, 0) returned %d, expected NEEDLE_OK", where, status);
  same(label("%s, after feed(s, tokens, 0)", where), s, &before);
  float *out = xmalloc(emb_dim * sizeof(float));
  if ((status = FN(_embedding)(NULL, out)) != NEEDLE_ERR_ARG)
    failf("%s: embedding(NULL, out) returned %d, expected NEEDLE_ERR_ARG", where, status);
  if ((status = FN(_embedding)(s, NULL)) != NEEDLE_ERR_ARG)
    failf("%s: embedding(s, NULL) returned %d, expected NEEDLE_ERR_ARG", where, status);
  same(label("%s, after the NULL embedding calls", where), s, &before);
  free(out);
  snap_free(&before);
}

static void check_arguments(void) {
  if (arena_size == 0)
    failf("arena_size() is 0");
  if (arena_align == 0 || (arena_align & (arena_align - 1)))
    failf("arena_align() = %zu is not a power of two", arena_align);
  if (failures)
    return;

  if (FN(_open)(NULL, arena_size))
    failf("open(NULL, arena_size()) did not return NULL");
  if (FN(_open)(NULL, 0))
    failf("open(NULL, 0) did not return NULL");
  /* A room of arena_size() + align bytes, so base + 1 still has arena_size() bytes after it. */
  unsigned char *base = aligned_alloc(arena_align, round_up(arena_size + arena_align, arena_align));
  if (!base)
    die("aligned_alloc failed");
  memset(base, 0x51, arena_size + arena_align);
  if (FN(_open)(base, arena_size - 1))
    failf("open(arena, arena_size() - 1) did not return NULL");
  if (FN(_open)(base, 0))
    failf("open(arena, 0) did not return NULL");
  if (arena_align > 1) {
    if (FN(_open)(base + 1, arena_size))
      failf("open(arena + 1, arena_size()) did not return NULL (alignment %zu)", arena_align);
    if (FN(_open)(base + arena_align / 2, arena_size + arena_align / 2))
      failf("open(arena + align / 2, ...) did not return NULL (alignment %zu)", arena_align);
  } else {
    printf("arguments: arena_align() is 1, so no pointer is misaligned (not checked)\n");
  }
  if (!FN(_open)(base, arena_size + arena_align))
    failf("open(arena, more than arena_size()) returned NULL");
  free(base);

  /* An arena of exactly arena_size() bytes (the rest of its room poisoned) works. */
  fresh_t f = fresh(0x52), r = fresh(0x53);
  int32_t *tokens = stream(6);
  bad_arguments("fresh", f.s, tokens);
  const size_t k = 7 < max_seq ? 7 : max_seq / 2;
  feed_ok("tokens", f.s, tokens, k);
  feed_ok("tokens", r.s, tokens, k);
  bad_arguments(label("after %zu tokens", k), f.s, tokens);
  feed_ok("tokens", f.s, tokens + k, max_seq - k);
  feed_ok("tokens", r.s, tokens + k, max_seq - k);
  same_sessions("bad arguments, then more tokens", f.s, r.s);
  fresh_free(&f);
  fresh_free(&r);
  free(tokens);
}

/* ------------------------------------------------------------------------------------------ */
/* 4b. Sessions that are not sessions, buffers inside the arena                                 */
/* ------------------------------------------------------------------------------------------ */

/* Every call refuses `s` and writes nothing: the room's bytes stay as they were. */
static void refused_session(const char *what, block_t *b) {
  session *s = (session *)b->base;
  unsigned char *copy = xmalloc(arena_size);
  memcpy(copy, b->base, arena_size);
  int32_t token = 1;
  float *out = xmalloc(emb_dim * sizeof(float));
  int status;
  if ((status = FN(_feed)(s, &token, 1)) != NEEDLE_ERR_ARG)
    failf("%s: feed returned %d, expected NEEDLE_ERR_ARG", what, status);
  if ((status = FN(_embedding)(s, out)) != NEEDLE_ERR_ARG)
    failf("%s: embedding returned %d, expected NEEDLE_ERR_ARG", what, status);
  if (FN(_logits)(s))
    failf("%s: logits did not return NULL", what);
  if (FN(_confidence)(s) != 0.0f)
    failf("%s: confidence did not return 0", what);
  if (FN(_position)(s) != 0)
    failf("%s: position did not return 0", what);
  FN(_reset)(s);
  if (memcmp(copy, b->base, arena_size))
    failf("%s: the arena changed", what);
  free(out);
  free(copy);
}

static void check_misuse(void) {
  /* Never opened: zeros and a pattern. */
  for (int pattern = 0; pattern < 0x100; pattern += 0xa5) {
    block_t b = block_new(1, (unsigned char)pattern);
    refused_session(label("never opened, bytes 0x%02x", pattern), &b);
    block_free(&b);
  }
  /* Opened, then its header overwritten: the first 8 bytes (the position), the 8 after (the
   * tag) or the 8 after those (the most tokens held) as 0xff, a position past max_seq_len, or a
   * most-held below the position or past max_seq_len. The header's layout is the runtime's own
   * (needle_rt::SessionHeader); these bytes stand for any corruption of it. */
  int32_t *tokens = stream(8);
  for (int field = 0; field < 6; ++field) {
    block_t b = block_new(1, 0x61);
    feed_ok("tokens", open_at(&b, 0), tokens, 3);
    const int64_t values[] = {(int64_t)max_seq + 1, 2, (int64_t)max_seq + 1};
    if (field < 3)
      memset(b.base + 8 * field, 0xff, 8);
    else
      memcpy(b.base + (field == 3 ? 0 : 16), &values[field - 3], sizeof(int64_t));
    refused_session(label("header field %d overwritten", field), &b);
    block_free(&b);
  }
  /* Tokens and an embedding output inside the session's own arena are refused, and the session
   * goes on as if the calls had not been made. */
  fresh_t f = fresh(0x62), r = fresh(0x63);
  feed_ok("tokens", f.s, tokens, 3);
  feed_ok("tokens", r.s, tokens, 3);
  snap_t before = snap_of(f.s);
  unsigned char *arena = (unsigned char *)f.s;
  const size_t offsets[] = {0, arena_size / 2, arena_size - 2 * sizeof(int32_t)};
  for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; ++i) {
    const size_t at = offsets[i] / sizeof(int32_t) * sizeof(int32_t);
    int status = FN(_feed)(f.s, (const int32_t *)(arena + at), 2);
    if (status != NEEDLE_ERR_ARG)
      failf("tokens at arena + %zu: feed returned %d, expected NEEDLE_ERR_ARG", at, status);
    if (at + emb_dim * sizeof(float) <= arena_size &&
        (status = FN(_embedding)(f.s, (float *)(arena + at))) != NEEDLE_ERR_ARG)
      failf("out at arena + %zu: embedding returned %d, expected NEEDLE_ERR_ARG", at, status);
  }
  same("after the refused calls", f.s, &before);
  feed_ok("tokens", f.s, tokens + 3, max_seq - 3);
  feed_ok("tokens", r.s, tokens + 3, max_seq - 3);
  same_sessions("refused calls, then more tokens", f.s, r.s);
  snap_free(&before);
  fresh_free(&f);
  fresh_free(&r);
  free(tokens);
}

/* ------------------------------------------------------------------------------------------ */
/* 5. Before any token                                                                          */
/* ------------------------------------------------------------------------------------------ */

static void check_initial(void) {
  /* 0xff bytes are NaNs as floats: nothing may be read from the arena before it is written. */
  fresh_t a = fresh(0x00), b = fresh(0xff);
  snap_t sa = snap_of(a.s), sb = snap_of(b.s);
  for (int which = 0; which < 2; ++which) {
    const snap_t *s = which ? &sb : &sa;
    const char *what = which ? "fresh in 0xff bytes" : "fresh in 0x00 bytes";
    if (s->position != 0)
      failf("%s: position %zu, expected 0", what, s->position);
    for (size_t i = 0; i < vocab; ++i)
      if (bits(s->logits[i]) != 0) {
        failf("%s: logits[%zu] = %.9g (0x%08x), expected +0", what, i, s->logits[i], (unsigned)bits(s->logits[i]));
        break;
      }
    if (s->embedding_status != NEEDLE_OK)
      failf("%s: embedding returned %d", what, s->embedding_status);
    for (size_t i = 0; i < emb_dim; ++i)
      if (bits(s->embedding[i]) != 0) {
        failf("%s: embedding[%zu] = %.9g (0x%08x), expected +0", what, i, s->embedding[i],
              (unsigned)bits(s->embedding[i]));
        break;
      }
    if (!(s->confidence > 0.0f && s->confidence < 1.0f))
      failf("%s: confidence %g is not a probability", what, s->confidence);
  }
  compare_snaps("fresh in 0xff bytes against fresh in 0x00 bytes", &sb, &sa, 0.0, NULL);

  /* σ(bias) from the head itself: after only the pad token nothing is pooled, so the pooled
   * vector is zero, the confidence σ(proj · 0 + bias) = σ(bias) and the embedding zero. */
  const int32_t pad[] = {NEEDLE_PAD_TOKEN};
  feed_ok("pad", a.s, pad, 1);
  snap_t sp = snap_of(a.s);
  if (bits(sp.confidence) != bits(sa.confidence))
    failf("confidence before any token %.9g (0x%08x), after only the pad token %.9g (0x%08x): not σ(bias)",
          sa.confidence, (unsigned)bits(sa.confidence), sp.confidence, (unsigned)bits(sp.confidence));
  for (size_t i = 0; i < emb_dim; ++i)
    if (sp.embedding[i] != 0.0f) {
      failf("after only the pad token: embedding[%zu] = %.9g, expected 0", i, sp.embedding[i]);
      break;
    }
  printf("initial: confidence %.9g before any token\n", sa.confidence);
  snap_free(&sp);
  snap_free(&sa);
  snap_free(&sb);
  fresh_free(&a);
  fresh_free(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* 6. Two sessions on two threads                                                               */
/* ------------------------------------------------------------------------------------------ */

enum { kRounds = 6 };

typedef struct {
  block_t *block;
  size_t index;
  const int32_t *tokens;
  pthread_barrier_t *start;
  snap_t *out; /* [kRounds][max_seq] */
  int status;
} job_t;

static void *run_job(void *arg) {
  job_t *job = arg;
  session *s = FN(_open)(job->block->base + job->index * job->block->room, arena_size);
  pthread_barrier_wait(job->start);
  if (!s) {
    job->status = -100;
    return NULL;
  }
  for (size_t round = 0; round < kRounds; ++round) {
    FN(_reset)(s);
    for (size_t k = 0; k < max_seq; ++k) {
      const int status = FN(_feed)(s, job->tokens + k, 1);
      if (status != NEEDLE_OK) {
        job->status = status;
        return NULL;
      }
      job->out[round * max_seq + k] = snap_of(s);
    }
  }
  return NULL;
}

static void check_threads(void) {
  int32_t *tokens[2] = {stream(7), stream(8)};
  snap_t *want[2] = {reference_run(tokens[0], max_seq, 0x61), reference_run(tokens[1], max_seq, 0x62)};
  /* Two arenas back to back in one block: a session writing past its arena would race with the
   * other thread (and fail the comparison). */
  block_t block = block_new(2, 0x63);
  pthread_barrier_t start;
  if (pthread_barrier_init(&start, NULL, 2))
    die("pthread_barrier_init failed");
  job_t jobs[2];
  pthread_t threads[2];
  for (size_t i = 0; i < 2; ++i) {
    jobs[i] = (job_t){&block, i, tokens[i], &start, xmalloc(kRounds * max_seq * sizeof(snap_t)), 0};
    if (pthread_create(&threads[i], NULL, run_job, &jobs[i]))
      die("pthread_create failed");
  }
  for (size_t i = 0; i < 2; ++i)
    pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&start);
  for (size_t i = 0; i < 2; ++i) {
    if (jobs[i].status) {
      failf("thread %zu: open or feed failed (%d)", i, jobs[i].status);
      continue;
    }
    for (size_t round = 0; round < kRounds; ++round)
      for (size_t k = 0; k < max_seq; ++k) {
        snap_t *got = &jobs[i].out[round * max_seq + k];
        if (compare_snaps(label("thread %zu, round %zu", i, round), got, &want[i][k], 0.0, NULL) != 1) {
          printf("FAIL %s: (thread %zu, round %zu, after %zu tokens)\n", check, i, round, k + 1);
          round = kRounds;
          break;
        }
      }
    for (size_t j = 0; j < kRounds * max_seq; ++j)
      snap_free(&jobs[i].out[j]);
    free(jobs[i].out);
  }
  printf("threads: 2 threads x %d rounds x %zu tokens\n", (int)kRounds, max_seq);
  block_free(&block);
  for (size_t i = 0; i < 2; ++i) {
    snaps_free(want[i], max_seq);
    free(tokens[i]);
  }
}

/* ------------------------------------------------------------------------------------------ */

static const struct {
  const char *name;
  void (*run)(void);
} kChecks[] = {
    {"feeding", check_feeding},     {"errors", check_errors},   {"reset", check_reset},
    {"arguments", check_arguments}, {"misuse", check_misuse},   {"initial", check_initial},
    {"threads", check_threads},
};
enum { kNumChecks = sizeof kChecks / sizeof kChecks[0] };

int main(int argc, char **argv) {
  const info_t *info = FN(_info)();
  vocab = info->vocab_size, emb_dim = info->embedding_dim, max_seq = info->max_seq_len;
  arena_size = FN(_arena_size)(), arena_align = FN(_arena_align)();
  printf("info: vocab %zu, d_model %u, layers %u, max_seq %zu, embedding %zu, blocks", vocab, (unsigned)info->d_model,
         (unsigned)info->num_layers, max_seq, emb_dim);
  for (uint32_t i = 0; i < info->num_layers; ++i)
    printf("%s%d", i ? "," : " ", (int)info->source_blocks[i]);
  printf("; arena %zu bytes, align %zu\n", arena_size, arena_align);
  if (vocab < 2 || max_seq < 8 || emb_dim == 0)
    die("these checks need vocab_size >= 2, max_seq_len >= 8 and an embedding");

  int run[kNumChecks] = {0}, failed = 0;
  for (int i = 1; i < argc; ++i) {
    int found = 0;
    for (int c = 0; c < kNumChecks; ++c)
      if (!strcmp(argv[i], kChecks[c].name))
        run[c] = found = 1;
    if (!found) {
      printf("usage: behaviour [feeding|errors|reset|arguments|misuse|initial|threads]...\n");
      return 2;
    }
  }
  for (int c = 0; c < kNumChecks; ++c) {
    if (argc > 1 && !run[c])
      continue;
    check = kChecks[c].name;
    failures = 0;
    kChecks[c].run();
    if (failures)
      printf("FAIL %s (%d differences)\n", check, failures);
    else
      printf("PASS %s\n", check);
    fflush(stdout);
    failed += failures != 0;
  }
  printf("%d checks failed\n", failed);
  return failed ? 1 : 0;
}
