/* Runs a compiled model's tokenizer through its C interface, as a product would:
 *
 *   text INPUT OUTPUT
 *
 * INPUT holds one case a line (test/tokenizer/object_texts.py writes them from texts.jsonl):
 *   e HEX        encode the bytes HEX (special tokens matched), then decode the ids
 *   d ID ID ...  decode the ids
 *   i HEX        the id of the added token HEX spells (NAME_token_id)
 *   b ID         the bytes token ID stands for (NAME_token_bytes), "error N" for a status N
 *   m            NAME_info's bos_id and eos_id
 * and OUTPUT one line for each: "IDS ; HEX" (ids, then the decoded bytes), the id, the hex or
 * the two ids. Encoding first asks with no room for ids, which must report NEEDLE_ERR_SPACE and
 * the count; decoding goes one token at a time, each asked for with no room first, as
 * tokenizer-encode does.
 * Built with -DNEEDLE_NAME=<--name> -DNEEDLE_HEADER="<OUT.h>". C11. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"

static int fail(const char *what, const char *line) {
  fprintf(stderr, "text: %s: %s\n", what, line);
  exit(1);
}

static size_t parse_hex(const char *hex, unsigned char *out) {
  size_t n = 0;
  for (; hex[0] && hex[0] != '\n' && hex[1]; hex += 2) {
    unsigned byte = 0;
    sscanf(hex, "%2x", &byte);
    out[n++] = (unsigned char)byte;
  }
  return n;
}

static void print_hex(FILE *f, const char *bytes, size_t n) {
  for (size_t i = 0; i < n; ++i)
    fprintf(f, "%02x", (unsigned char)bytes[i]);
}

/* The ids decoded, one token at a time, to f as hex. */
static void decode(FILE *f, const int32_t *ids, size_t n, const char *line) {
  CAT(NEEDLE_NAME, _decoder) decoder;
  FN(_decoder_init)(&decoder);
  char piece[4096];
  for (size_t i = 0; i < n; ++i) {
    size_t length = 0;
    int status = FN(_decode_next)(&decoder, ids[i], NULL, 0, &length);
    if (status == NEEDLE_ERR_SPACE) {
      if (length > sizeof piece)
        fail("a token decodes to more than 4096 bytes", line);
      status = FN(_decode_next)(&decoder, ids[i], piece, length, &length);
    }
    if (status != NEEDLE_OK)
      fail("decode_next failed", line);
    print_hex(f, piece, length);
  }
  size_t length = 0;
  if (FN(_decode_flush)(&decoder, piece, sizeof piece, &length) != NEEDLE_OK)
    fail("decode_flush failed", line);
  print_hex(f, piece, length);
}

static void encode(FILE *f, const unsigned char *text, size_t n, const char *line) {
  const size_t scratch_size = FN(_encode_scratch_size)(n);
  void *scratch = malloc(scratch_size ? scratch_size : 1);
  size_t count = 0;
  int status = FN(_encode)((const char *)text, n, NEEDLE_ENCODE_SPECIAL, scratch, scratch_size, NULL, 0, &count);
  if (status != (count ? NEEDLE_ERR_SPACE : NEEDLE_OK))
    fail("encode with no room gave the wrong status", line);
  int32_t *ids = malloc((count ? count : 1) * sizeof *ids);
  size_t again = 0;
  if (FN(_encode)((const char *)text, n, NEEDLE_ENCODE_SPECIAL, scratch, scratch_size, ids, count, &again) !=
          NEEDLE_OK ||
      again != count)
    fail("encode failed with room for every id", line);
  for (size_t i = 0; i < count; ++i)
    fprintf(f, "%ld ", (long)ids[i]);
  fputs("; ", f);
  decode(f, ids, count, line);
  free(ids);
  free(scratch);
}

int main(int argc, char **argv) {
  if (argc != 3)
    return fail("usage", "text INPUT OUTPUT");
  FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
  if (!in || !out)
    return fail("cannot open", argv[1]);
  char *line = NULL;
  size_t size = 0;
  while (getline(&line, &size, in) > 0) {
    unsigned char *bytes = malloc(strlen(line) / 2 + 1);
    if (line[0] == 'e') {
      encode(out, bytes, parse_hex(line + 2, bytes), line);
    } else if (line[0] == 'i') {
      fprintf(out, "%ld", (long)FN(_token_id)((const char *)bytes, parse_hex(line + 2, bytes)));
    } else if (line[0] == 'b') {
      const char *token = NULL;
      size_t length = 0;
      const int status = FN(_token_bytes)((int32_t)strtol(line + 2, NULL, 10), &token, &length);
      if (status == NEEDLE_OK)
        print_hex(out, token, length);
      else
        fprintf(out, "error %d", status);
    } else if (line[0] == 'm') {
      fprintf(out, "%ld %ld", (long)FN(_info)()->bos_id, (long)FN(_info)()->eos_id);
    } else if (line[0] == 'd') {
      int32_t *ids = malloc(strlen(line) * sizeof *ids);
      size_t n = 0;
      for (char *p = line + 1, *end;; p = end) {
        const long id = strtol(p, &end, 10);
        if (end == p)
          break;
        ids[n++] = (int32_t)id;
      }
      for (size_t i = 0; i < n; ++i)
        fprintf(out, "%ld ", (long)ids[i]);
      fputs("; ", out);
      decode(out, ids, n, line);
      free(ids);
    } else {
      fail("a line of no known kind", line);
    }
    fputc('\n', out);
    free(bytes);
  }
  free(line);
  fclose(in);
  return fclose(out) == 0 ? 0 : fail("cannot write", argv[2]);
}
