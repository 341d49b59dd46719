/* How far the fast mode (needlec --activations int8) strays from the exact mode: two compiled
 * models of the same weights and depth, `--name exact -o exact` and `--name fast -o fast
 * --activations int8`, fed the same stream of N tokens one at a time. After each token it
 * compares the two logit vectors: whether their top-1 tokens agree, and the largest |logit
 * difference| relative to the exact mode's largest |logit|. Prints
 *
 *   tokens N top-1 A/N (P%) logit-error max M mean E confidence-error C
 *
 * and, with a minimum agreement MIN (percent), exits 1 below it.
 *
 *   agreement N [MIN]
 *
 * The stream is token_i = (17 + 7919·i) mod vocab, as test/bench/bench_model.c feeds. Built with
 * -I<the directory of exact.h and fast.h>. C11 (for aligned_alloc). */
#include "exact.h"
#include "fast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what) {
  fprintf(stderr, "agreement: %s\n", what);
  return 2;
}

static void *arena_for(size_t size, size_t align) { return aligned_alloc(align, (size + align - 1) / align * align); }

static size_t top1(const float *logits, size_t vocab) {
  size_t best = 0;
  for (size_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  return best;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3)
    return fail("usage: agreement N [MIN]");
  const long n = strtol(argv[1], NULL, 10);
  const double minimum = argc == 3 ? strtod(argv[2], NULL) : 0.0;
  const size_t vocab = exact_info()->vocab_size;
  if (n <= 0 || vocab != fast_info()->vocab_size)
    return fail("N must be positive, and both models must have one vocabulary");
  void *exact_arena = arena_for(exact_arena_size(), exact_arena_align());
  void *fast_arena = arena_for(fast_arena_size(), fast_arena_align());
  exact_session *exact = exact_open(exact_arena, exact_arena_size());
  fast_session *fast = fast_open(fast_arena, fast_arena_size());
  if (!exact || !fast)
    return fail("cannot open the sessions");
  long agree = 0;
  double worst = 0, total = 0, confidence = 0;
  for (long i = 0; i < n; ++i) {
    const int32_t token = (int32_t)((17 + 7919 * i) % (long)vocab);
    if (exact_feed(exact, &token, 1) != NEEDLE_OK || fast_feed(fast, &token, 1) != NEEDLE_OK)
      return fail("feed failed");
    const float *want = exact_logits(exact), *got = fast_logits(fast);
    double error = 0, scale = 0;
    for (size_t v = 0; v < vocab; ++v) {
      error = fmax(error, fabs((double)got[v] - want[v]));
      scale = fmax(scale, fabs((double)want[v]));
    }
    const double relative = scale > 0 ? error / scale : error;
    worst = fmax(worst, relative);
    total += relative;
    confidence = fmax(confidence, fabs((double)fast_confidence(fast) - exact_confidence(exact)));
    agree += top1(got, vocab) == top1(want, vocab);
  }
  const double percent = 100.0 * (double)agree / (double)n;
  printf("tokens %ld top-1 %ld/%ld (%.1f%%) logit-error max %.4f mean %.4f confidence-error %.4f\n", n, agree, n,
         percent, worst, total / (double)n, confidence);
  free(exact_arena);
  free(fast_arena);
  return percent < minimum ? 1 : 0;
}
