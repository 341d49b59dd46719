/* What call.c, extract.c and route.c share: the includes, a session on an arena of its own, a
 * request's answer, and a query read from a line of hex. Each program defines PROGRAM (its name,
 * for errors) first. */
#ifndef NEEDLE_E2E_REQUEST_H
#define NEEDLE_E2E_REQUEST_H

#include NEEDLE_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_name.h"
#define MAX_QUERY CAT(NEEDLE_NAME, _MAX_QUERY)
#define CAP 65536

/* One request's answer: its status, what it wrote, and the confidences it reported. */
typedef struct {
  int status;
  float confidence, probability;
  size_t length;
  char out[CAP];
} answer;

static void fail(const char *what, long value) {
  fprintf(stderr, "%s: %s (%ld)\n", PROGRAM, what, value);
  exit(1);
}

static FN(_session) * open_session(void) {
  const size_t align = FN(_arena_align)();
  const size_t size = (FN(_arena_size)() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size);
  FN(_session) *s = arena ? FN(_open)(arena, size) : NULL;
  if (!s)
    fail("open", 0);
  return s;
}

/* The query a line of hex holds, into text[0..MAX_QUERY + 1) (one byte past the limit at most, so
 * that a query too long is still one); returns its length. */
static size_t read_query(const char *line, char *text) {
  size_t len = 0;
  for (const char *hex = line; hex[0] && hex[0] != '\n' && hex[1] && len <= MAX_QUERY; hex += 2) {
    unsigned byte = 0;
    sscanf(hex, "%2x", &byte);
    text[len++] = (char)byte;
  }
  return len;
}

#endif
