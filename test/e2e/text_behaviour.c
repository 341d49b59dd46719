/* The text functions' behaviour docs/c-interface.md promises, checked on a model compiled with
 * Llama 2's tokenizer (SentencePiece-style: <s> as BOS, byte fallback, a decoder that drops the
 * first leading space) through its C interface. Each failed check is printed and makes the
 * program exit 1.
 *
 *   text_behaviour [CHECK...]   run the named checks (all but stack when none is named):
 *     arguments   NULL pointers, too little scratch and a text too long give NEEDLE_ERR_ARG;
 *                 any alignment of scratch does; token_id of nothing is -1
 *     encode      the count when ids do not fit (nothing written past cap); the flags; info's BOS/EOS
 *     decode      a character split over byte tokens is held back, then written whole; an
 *                 unknown id or too small a buffer leaves the decoder unchanged; flush writes
 *                 U+FFFD for what is held; the first leading space is dropped
 *     bytes       token_bytes and token_id of ids and added tokens
 *     stack       NAME_encode of a long text uses at most NAME_ENCODE_STACK_BYTES of stack
 *                 (measured on a stack of its own painted with a pattern; not under sanitizers);
 *                 any model with a tokenizer, the other checks Llama 2's
 *
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>", C11 (ucontext for the stack). */
#define _GNU_SOURCE /* ucontext */

#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "model_name.h"
#define DECODER CAT(NEEDLE_NAME, _decoder)
#define STACK_BYTES CAT(NEEDLE_NAME, _ENCODE_STACK_BYTES)

static int failures;

static void check(int ok, const char *what) {
  if (!ok) {
    printf("FAIL %s\n", what);
    ++failures;
  }
}

/* Encodes text with flags into ids (room for cap); returns the status, *count as the call gives it. */
static int encode(const char *text, unsigned flags, int32_t *ids, size_t cap, size_t *count) {
  static unsigned char scratch[1 << 22];
  const size_t len = strlen(text);
  if (FN(_encode_scratch_size)(len) > sizeof scratch)
    return 1;
  return FN(_encode)(text, len, flags, scratch, FN(_encode_scratch_size)(len), ids, cap, count);
}

static void arguments(void) {
  unsigned char scratch[2048];
  int32_t ids[8];
  size_t count = 0;
  const size_t need = FN(_encode_scratch_size)(5);
  check(need <= sizeof scratch, "arguments: scratch for 5 bytes fits 2048");
  check(FN(_encode)(NULL, 5, 0, scratch, need, ids, 8, &count) == NEEDLE_ERR_ARG, "arguments: NULL text");
  check(FN(_encode)("hello", 5, 0, scratch, need, ids, 8, NULL) == NEEDLE_ERR_ARG, "arguments: NULL count");
  check(FN(_encode)("hello", 5, 0, scratch, need, NULL, 8, &count) == NEEDLE_ERR_ARG, "arguments: NULL ids, cap 8");
  check(FN(_encode)("hello", 5, 0, NULL, need, ids, 8, &count) == NEEDLE_ERR_ARG, "arguments: NULL scratch");
  check(FN(_encode)("hello", 5, 0, scratch, need - 1, ids, 8, &count) == NEEDLE_ERR_ARG,
        "arguments: one byte of scratch too few");
  check(FN(_encode)(NULL, 0, 0, scratch, FN(_encode_scratch_size)(0), NULL, 0, &count) == NEEDLE_OK && count == 0,
        "arguments: an empty text (NULL, 0) is no ids");
  check(FN(_encode)("hello", 5, 0, scratch + 1, need, ids, 8, &count) == NEEDLE_OK && count > 0,
        "arguments: scratch at an odd address");
  check(FN(_encode_scratch_size)(SIZE_MAX) == SIZE_MAX && FN(_encode_scratch_size)(SIZE_MAX / 4) == SIZE_MAX,
        "arguments: no scratch size for a text too long");
  check(FN(_encode)("hello", SIZE_MAX / 4, 0, scratch, sizeof scratch, ids, 8, &count) == NEEDLE_ERR_ARG,
        "arguments: a text too long is refused before it is read");
  const char *bytes = NULL;
  size_t len = 0;
  check(FN(_token_bytes)(0, NULL, &len) == NEEDLE_ERR_ARG, "arguments: token_bytes, NULL bytes");
  check(FN(_token_bytes)(0, &bytes, NULL) == NEEDLE_ERR_ARG, "arguments: token_bytes, NULL len");
  check(FN(_token_id)(NULL, 3) == -1 && FN(_token_id)("<s>", 0) == -1, "arguments: token_id of nothing is -1");
  DECODER d;
  char out[16];
  check(FN(_decode_next)(NULL, 1, out, sizeof out, &len) == NEEDLE_ERR_ARG, "arguments: decode_next, NULL decoder");
  FN(_decoder_init)(NULL); /* does nothing */
  FN(_decoder_init)(&d);
  check(FN(_decode_next)(&d, 1, NULL, 4, &len) == NEEDLE_ERR_ARG, "arguments: decode_next, NULL out, cap 4");
  check(FN(_decode_next)(&d, 1, out, sizeof out, NULL) == NEEDLE_ERR_ARG, "arguments: decode_next, NULL len");
  check(FN(_decode_flush)(&d, out, sizeof out, NULL) == NEEDLE_ERR_ARG, "arguments: decode_flush, NULL len");
  check(FN(_decode_flush)(NULL, out, sizeof out, &len) == NEEDLE_ERR_ARG, "arguments: decode_flush, NULL decoder");
}

static void encoding(void) {
  int32_t all[64], few[64];
  size_t count = 0, again = 0;
  const char *text = "Hello, world: the tokenizer is compiled.";
  check(encode(text, 0, all, 64, &count) == NEEDLE_OK && count > 4, "encode: a sentence");
  for (size_t cap = 0; cap < count; ++cap) {
    for (size_t i = 0; i < 64; ++i)
      few[i] = -7;
    int status = encode(text, 0, few, cap, &again);
    check(status == NEEDLE_ERR_SPACE && again == count, "encode: too few ids gives NEEDLE_ERR_SPACE and the count");
    check(few[cap] == -7, "encode: nothing written past cap");
  }
  /* Llama 2's tokenizer_config.json names <s> and </s>; its post-processor puts <s> alone. */
  check(FN(_info)()->bos_id == 1 && FN(_info)()->eos_id == 2, "encode: info's BOS 1 and EOS 2 (Llama 2's)");
  check(encode(text, NEEDLE_ENCODE_BOS_EOS, few, 64, &again) == NEEDLE_OK && again == count + 1 && few[0] == 1 &&
            memcmp(few + 1, all, count * sizeof *all) == 0,
        "encode: NEEDLE_ENCODE_BOS_EOS puts BOS before the same ids");
  check(encode("a<s>b", NEEDLE_ENCODE_SPECIAL, few, 64, &again) == NEEDLE_OK && again == 3 && few[1] == 1,
        "encode: NEEDLE_ENCODE_SPECIAL matches <s> in the text");
  check(encode("a<s>b", 0, few, 64, &again) == NEEDLE_OK && again > 3, "encode: without it <s> is text");
  for (size_t i = 0; i < again; ++i)
    check(few[i] != 1, "encode: without NEEDLE_ENCODE_SPECIAL no id is <s>");
}

static void decoding(void) {
  /* U+20AC as its three byte tokens <0xE2> <0x82> <0xAC>: ids 3 + byte. */
  const int32_t bytes[3] = {3 + 0xE2, 3 + 0x82, 3 + 0xAC};
  DECODER d, before;
  char out[16];
  size_t len = 99;
  FN(_decoder_init)(&d);
  check(FN(_decode_next)(&d, bytes[0], out, sizeof out, &len) == NEEDLE_OK && len == 0, "decode: E2 is held back");
  check(FN(_decode_next)(&d, bytes[1], NULL, 0, &len) == NEEDLE_OK && len == 0, "decode: 82 is held back, no room");
  before = d;
  check(FN(_decode_next)(&d, 32000, out, sizeof out, &len) == NEEDLE_ERR_TOKEN, "decode: id 32000 is unknown");
  check(FN(_decode_next)(&d, -1, out, sizeof out, &len) == NEEDLE_ERR_TOKEN, "decode: id -1 is unknown");
  check(memcmp(&d, &before, sizeof d) == 0, "decode: an unknown id leaves the decoder unchanged");
  check(FN(_decode_next)(&d, bytes[2], out, 2, &len) == NEEDLE_ERR_SPACE && len == 3,
        "decode: AC needs 3 bytes, 2 given");
  check(memcmp(&d, &before, sizeof d) == 0, "decode: too small a buffer leaves the decoder unchanged");
  check(FN(_decode_next)(&d, bytes[2], out, 3, &len) == NEEDLE_OK && len == 3 && memcmp(out, "\xE2\x82\xAC", 3) == 0,
        "decode: AC completes U+20AC");
  check(FN(_decode_flush)(&d, out, sizeof out, &len) == NEEDLE_OK && len == 0, "decode: nothing held, nothing flushed");
  FN(_decoder_init)(&d);
  check(FN(_decode_next)(&d, bytes[0], out, sizeof out, &len) == NEEDLE_OK && len == 0, "decode: E2 again");
  check(FN(_decode_flush)(&d, out, 2, &len) == NEEDLE_ERR_SPACE && len == 3, "decode: flush needs 3 bytes");
  check(FN(_decode_flush)(&d, out, 3, &len) == NEEDLE_OK && len == 3 && memcmp(out, "\xEF\xBF\xBD", 3) == 0,
        "decode: flush writes U+FFFD for a held E2");
  /* The decoder drops the first leading space: "▁Hello" decodes to "Hello" first, " Hello" after. */
  int32_t ids[4];
  size_t count = 0;
  check(encode("Hello Hello", 0, ids, 4, &count) == NEEDLE_OK && count == 2, "decode: Hello Hello is two ids");
  FN(_decoder_init)(&d);
  check(FN(_decode_next)(&d, ids[0], out, sizeof out, &len) == NEEDLE_OK && len == 5 && memcmp(out, "Hello", 5) == 0,
        "decode: the first token's leading space is dropped");
  check(FN(_decode_next)(&d, ids[1], out, sizeof out, &len) == NEEDLE_OK && len == 6 && memcmp(out, " Hello", 6) == 0,
        "decode: the second token's is kept");
}

static void token_bytes(void) {
  const char *bytes = NULL;
  size_t len = 0;
  check(FN(_token_bytes)(1, &bytes, &len) == NEEDLE_OK && len == 3 && memcmp(bytes, "<s>", 3) == 0,
        "bytes: id 1 is <s>");
  check(FN(_token_bytes)(3 + 'A', &bytes, &len) == NEEDLE_OK && len == 1 && bytes[0] == 'A', "bytes: <0x41> is A");
  check(FN(_token_bytes)(32000, &bytes, &len) == NEEDLE_ERR_TOKEN, "bytes: id 32000 is unknown");
  check(FN(_token_bytes)(-5, &bytes, &len) == NEEDLE_ERR_TOKEN, "bytes: id -5 is unknown");
  check(FN(_token_id)("<s>", 3) == 1 && FN(_token_id)("</s>", 4) == 2 && FN(_token_id)("<unk>", 5) == 0,
        "bytes: the added tokens' ids");
  check(FN(_token_id)("<s", 2) == -1 && FN(_token_id)("<s>x", 4) == -1 && FN(_token_id)("Hello", 5) == -1,
        "bytes: no added token is <s, <s>x or Hello");
}

/* NAME_encode on a stack of its own, painted first: the bytes it changed are what it used. */
static char text[4096];
static size_t stack_count;
static ucontext_t caller, callee;
static void encode_on_stack(void) {
  static int32_t ids[4096];
  stack_count = 0;
  encode(text, NEEDLE_ENCODE_SPECIAL, ids, 4096, &stack_count);
}

static void stack(void) {
  enum { kStack = 1 << 16 };
  static unsigned char memory[kStack];
  for (size_t i = 0; i < sizeof text - 1; ++i) /* words, digits, spaces, punctuation, non-ASCII, <s> */
    text[i] = "Hello wor1d 42, <s>  \t\xC3\xA9t\xC3\xA9!\n"[i % 25];
  encode_on_stack(); /* once on this stack first: the dynamic linker resolves every call */
  memset(memory, 0xA5, sizeof memory);
  getcontext(&callee);
  callee.uc_stack.ss_sp = memory;
  callee.uc_stack.ss_size = sizeof memory;
  callee.uc_link = &caller;
  makecontext(&callee, encode_on_stack, 0);
  swapcontext(&caller, &callee);
  size_t untouched = 0;
  while (untouched < sizeof memory && memory[untouched] == 0xA5)
    ++untouched;
  const size_t used = sizeof memory - untouched;
  printf("stack: %zu ids, %zu bytes of stack (bound %d, with makecontext's frame)\n", stack_count, used, STACK_BYTES);
  check(stack_count > 1000, "stack: the text was encoded");
  check(used <= STACK_BYTES, "stack: within NAME_ENCODE_STACK_BYTES");
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*run)(void);
  } checks[] = {{"arguments", arguments}, {"encode", encoding}, {"decode", decoding}, {"bytes", token_bytes},
                {"stack", stack}};
  for (size_t i = 0; i < sizeof checks / sizeof *checks; ++i) {
    int asked = argc == 1 && strcmp(checks[i].name, "stack") != 0;
    for (int a = 1; a < argc; ++a)
      asked |= strcmp(argv[a], checks[i].name) == 0;
    if (!asked)
      continue;
    const int before = failures;
    checks[i].run();
    printf("%s %s\n", failures == before ? "PASS" : "FAIL", checks[i].name);
  }
  printf("%d checks failed\n", failures);
  return failures != 0;
}
