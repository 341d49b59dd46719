/* A tool call from text, through the C interface of a compiled Needle model: the product's
 * request in, and out either a call of one of its tools (examples/tools.json: an alarm, a
 * message, a search) with valid arguments, or "no call" when the confidence head says the model
 * should not act. The call is valid whatever the weights: the automaton needlec compiled from
 * the tools' schemas (docs/tool-calls.md) masks every token. Plain C11; the model is whatever
 * needle_add_model() compiled with TOOLS, named agent; compiled with a SCHEMA too, the program
 * also prints the typed record the text gives (agent_extract).
 *
 *   tool_call [TEXT [THRESHOLD]]      e.g. tool_call "Wake me up at seven" 0.5
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const char *text = argc > 1 ? argv[1] : "Wake me up at seven tomorrow";
  const float threshold = argc > 2 ? strtof(argv[2], NULL) : 0.5f;
  const size_t align = agent_arena_align();
  const size_t size = (agent_arena_size() + align - 1) / align * align;
  void *arena = aligned_alloc(align, size);
  agent_session *s = arena ? agent_open(arena, size) : NULL;
  if (!s) {
    fprintf(stderr, "tool_call: no arena of %zu bytes\n", size);
    return 1;
  }
  static char call[16384];
  size_t length = 0;
  float confidence = 0.0f;
  const double start = seconds();
  const int status = agent_call(s, text, strlen(text), threshold, call, sizeof call, &length, &confidence);
  const double elapsed = seconds() - start;
  printf("request: %s\n", text);
  printf("confidence: %.3f (threshold %.3f)\n", confidence, threshold);
  if (status == NEEDLE_NO_CALL)
    printf("no call\n");
  else if (status == NEEDLE_OK)
    printf("call: %.*s\ntoken probability: %.3f (the least of the call's tokens, under the tools' mask)\n", (int)length,
           call, agent_call_probability(s));
  else
    printf("error: status %d\n", status);
  printf("text to call: %.1f ms, %zu tokens in the session (%.0f tokens/s)\n", 1e3 * elapsed, agent_position(s),
         (double)agent_position(s) / elapsed);
  /* The same request again on the session: with rollback for a request (needlec --max-rollback),
   * the session goes back to the end of the prompt's fixed prefix instead of feeding it again. */
  const double again = seconds();
  const int repeated = agent_call(s, text, strlen(text), threshold, call, sizeof call, &length, &confidence);
  printf("again, on the same session: %.1f ms\n", 1e3 * (seconds() - again));
  if (repeated != status)
    printf("error: the same request again answered %d, not %d\n", repeated, status);
#ifdef agent_HAS_EXTRACT
  static char record[16384];
  size_t record_length = 0;
  const int extracted = agent_extract(s, text, strlen(text), record, sizeof record, &record_length);
  if (extracted == NEEDLE_OK)
    printf("record: %.*s\n", (int)record_length, record);
  else
    printf("record: error, status %d\n", extracted);
#endif
  free(arena);
  return (status == NEEDLE_OK || status == NEEDLE_NO_CALL) && repeated == status ? 0 : 1;
}
