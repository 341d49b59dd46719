/* Decoding through the C interface of a compiled Needle model: feed a prompt, then repeatedly
 * feed the next token NAME_sample picks (greedy unless a sampling option is given), stopping at
 * any of the model's stop tokens (NAME_info's stop_ids). Prints the tokens, the confidence, and
 * the prefill and decode speeds; with a model compiled with a tokenizer, the prompt is text
 * (encoded by the model's NAME_encode) and the generated tokens are printed as text too (its
 * streaming decoder). The prompt is fed in runs of 64 tokens, so --budget-ms can cut a long one
 * short between runs (docs/c-interface.md, "Stopping, and cutting a long feed short").
 * --threads N lends the session a pool of N threads (examples/pools/pool_threads.c), the same
 * tokens faster (docs/c-interface.md, "Every core"). Plain C11; the model is whatever
 * needle_add_model() compiled.
 *
 *   greedy_decode [PROMPT [TOKENS]] [--temperature T] [--top-k K] [--top-p P] [--min-p P]
 *                 [--repeat-penalty R] [--seed S] [--budget-ms MS] [--threads N]
 *     e.g. greedy_decode "The license" 32 --temperature 0.8 --top-k 40 --seed 7
 *     (a model without a tokenizer: greedy_decode 17,4242,9 32)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "model.h"
#include "pools/pool_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxPrompt = 4096 };

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Whether `token` is one of the tokens the model was built to stop at (needlec --stop). */
static int is_stop(const model_info_t *info, int32_t token) {
  for (uint32_t i = 0; i < info->stop_count; ++i)
    if (info->stop_ids[i] == token)
      return 1;
  return 0;
}

/* The command line: the prompt and the token count by position, the rest by name. */
struct options {
  const char *prompt;
  long steps;
  needle_sample_params sampling;
  uint64_t seed;
  double budget_ms; /* 0: none */
  uint32_t threads; /* 1: no pool */
};

static struct options parse(int argc, char **argv, const char *default_prompt) {
  struct options o = {default_prompt, 32, {0.0f, 0, 1.0f, 0.0f, 1.0f, NULL, 0}, 1, 0.0, 1};
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (flag[0] != '-' || flag[1] != '-') {
      if (positional++ == 0)
        o.prompt = flag;
      else
        o.steps = strtol(flag, NULL, 10);
      continue;
    }
    if (!value) {
      fprintf(stderr, "greedy_decode: %s needs a value\n", flag);
      exit(2);
    }
    ++i;
    if (!strcmp(flag, "--temperature"))
      o.sampling.temperature = strtof(value, NULL);
    else if (!strcmp(flag, "--top-k"))
      o.sampling.top_k = (uint32_t)strtoul(value, NULL, 10);
    else if (!strcmp(flag, "--top-p"))
      o.sampling.top_p = strtof(value, NULL);
    else if (!strcmp(flag, "--min-p"))
      o.sampling.min_p = strtof(value, NULL);
    else if (!strcmp(flag, "--repeat-penalty"))
      o.sampling.repetition_penalty = strtof(value, NULL);
    else if (!strcmp(flag, "--seed"))
      o.seed = strtoull(value, NULL, 10);
    else if (!strcmp(flag, "--budget-ms"))
      o.budget_ms = strtod(value, NULL);
    else if (!strcmp(flag, "--threads")) {
      const unsigned long threads = strtoul(value, NULL, 10);
      if (threads < 1 || threads > 256) {
        fprintf(stderr, "greedy_decode: --threads takes 1 to 256, not %s\n", value);
        exit(2);
      }
      o.threads = (uint32_t)threads;
    }    else {
      fprintf(stderr, "greedy_decode: unknown option %s\n", flag);
      exit(2);
    }
  }
  return o;
}

/* Feeds tokens in runs of 64, stopping between runs once the budget is spent (the first run
 * always goes): the tokens fed. */
static size_t feed_within(model_session *s, const int32_t *tokens, size_t n, double budget_ms, int *status) {
  const double start = seconds();
  size_t fed = 0;
  *status = NEEDLE_OK;
  while (fed < n && *status == NEEDLE_OK && (fed == 0 || budget_ms <= 0 || 1e3 * (seconds() - start) < budget_ms)) {
    const size_t run = n - fed < 64 ? n - fed : 64;
    *status = model_feed(s, tokens + fed, run);
    fed += *status == NEEDLE_OK ? run : 0;
  }
  return fed;
}

#ifdef model_HAS_TOKENIZER
static const char kDefaultPrompt[] = "The license";

/* The prompt's ids, by the model's tokenizer (the special tokens it names, its BOS/EOS). */
static size_t prompt_tokens(const char *prompt, int32_t *tokens) {
  const size_t len = strlen(prompt), scratch_size = model_encode_scratch_size(len);
  void *scratch = malloc(scratch_size);
  size_t n = 0;
  const int status = scratch ? model_encode(prompt, len, NEEDLE_ENCODE_SPECIAL | NEEDLE_ENCODE_BOS_EOS, scratch,
                                            scratch_size, tokens, kMaxPrompt, &n)
                             : NEEDLE_ERR_ARG;
  free(scratch);
  if (status != NEEDLE_OK) {
    fprintf(stderr, "greedy_decode: the prompt does not encode in %d tokens (status %d)\n", kMaxPrompt, status);
    exit(1);
  }
  return n;
}

/* Token `id`'s text, as much of it as is complete (a character split over tokens waits); a
 * token longer than the buffer is asked for again with room. */
static void print_text(model_decoder *decoder, int32_t id) {
  char piece[256], *out = piece;
  size_t len = 0;
  int status = model_decode_next(decoder, id, piece, sizeof piece, &len);
  if (status == NEEDLE_ERR_SPACE && (out = malloc(len)) != NULL)
    status = model_decode_next(decoder, id, out, len, &len);
  if (status == NEEDLE_OK)
    fwrite(out, 1, len, stdout);
  if (out != piece)
    free(out);
}
#else
static const char kDefaultPrompt[] = "17,4242,9,1024,77";

static size_t prompt_tokens(const char *prompt, int32_t *tokens) {
  size_t n = 0;
  for (char *p = (char *)prompt; *p && n < kMaxPrompt; ++n) {
    tokens[n] = (int32_t)strtol(p, &p, 10);
    if (*p == ',')
      ++p;
  }
  return n;
}
#endif

int main(int argc, char **argv) {
  struct options o = parse(argc, argv, kDefaultPrompt);
  const model_info_t *info = model_info();
  static int32_t tokens[kMaxPrompt], generated_tokens[4096];
  const size_t n = prompt_tokens(o.prompt, tokens);
  /* The caller owns the memory: one arena per session, sized and aligned by the model. */
  const size_t align = model_arena_align(), size = (model_arena_size() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size), *scratch = malloc(model_sample_scratch_size());
  model_session *s = arena ? model_open(arena, size) : NULL;
  if (!s || !scratch) {
    fprintf(stderr, "greedy_decode: cannot open a session\n");
    return 1;
  }
  needle_threads_pool *pool = o.threads > 1 ? needle_threads_pool_create(o.threads) : NULL;
  const needle_parallel parallel = {needle_threads_pool_parallel_for, pool, o.threads};
  if (pool && model_set_parallel(s, &parallel) != NEEDLE_OK) {
    fprintf(stderr, "greedy_decode: cannot lend the session a pool of %u threads\n", o.threads);
    return 1;
  }
  printf("model: %u blocks, vocabulary %u, d_model %u, arena %zu bytes, %u thread%s\n", info->num_layers,
         info->vocab_size, info->d_model, model_arena_size(), o.threads, o.threads > 1 ? "s" : "");

  double start = seconds();
  int status = NEEDLE_OK;
  const size_t fed = feed_within(s, tokens, n, o.budget_ms, &status);
  const double prefill = seconds() - start;
  printf("prompt:");
  for (size_t i = 0; i < n; ++i)
    printf(" %d", tokens[i]);
  if (fed < n)
    printf("\n(the budget of %.0f ms ran out after %zu of the prompt's %zu tokens)", o.budget_ms, fed, n);
  start = seconds();
  long generated = 0;
  needle_rng rng = {o.seed};
  while (fed == n && status == NEEDLE_OK && generated < o.steps && generated < 4096) {
    o.sampling.recent = generated_tokens; /* the penalty looks at what this run generated */
    o.sampling.recent_count = (size_t)generated;
    int32_t next = -1;
    status = model_sample(s, &o.sampling, &rng, scratch, model_sample_scratch_size(), &next);
    if (status != NEEDLE_OK)
      break;
    generated_tokens[generated++] = next;
    if (is_stop(info, next))
      break; /* printed, not fed: one of the tokens the model was built to stop at */
    status = model_feed(s, &next, 1);
  }
  const double decode = seconds() - start;
  printf("\ngenerated:");
  for (long i = 0; i < generated; ++i)
    printf(" %d", generated_tokens[i]);
#ifdef model_HAS_TOKENIZER
  model_decoder decoder; /* the prompt's tokens through it first: the decoder's start-of-text rule */
  model_decoder_init(&decoder);
  printf("\ntext: ");
  for (size_t i = 0; i < n; ++i)
    print_text(&decoder, tokens[i]);
  for (long i = 0; i < generated; ++i)
    print_text(&decoder, generated_tokens[i]);
  char tail[3];
  size_t tail_len = 0;
  if (model_decode_flush(&decoder, tail, sizeof tail, &tail_len) == NEEDLE_OK) /* U+FFFD for a cut character */
    fwrite(tail, 1, tail_len, stdout);
#endif
  if (generated > 0 && is_stop(info, generated_tokens[generated - 1]))
    printf("\nstopped at token %d, a stop token", generated_tokens[generated - 1]);
  printf("\nconfidence: %.4f after %zu tokens\n", model_confidence(s), model_position(s));
  printf("prefill: %zu tokens in %.1f ms (%.1f tokens/s); decode: %ld tokens in %.1f ms (%.1f tokens/s)\n", fed,
         1e3 * prefill, fed / prefill, generated, 1e3 * decode, generated / decode);
  needle_threads_pool_destroy(pool);
  free(scratch);
  free(arena);
  return status == NEEDLE_OK || status == NEEDLE_ERR_FULL ? 0 : 1;
}
