/* The C side of the web example (examples/web/README.md): NAME_call on a session of its own, for
 * a page's JavaScript. The page writes the request's UTF-8 into web_text() and calls web_call;
 * the call's JSON is then web_out()[0..web_out_length()), beside both confidences. Built for
 * wasm32 as a reactor (no main): examples/web/build.sh. The model is named agent. C11. */
#include "agent.h"

#include <stdlib.h>

static char text[agent_MAX_QUERY];
static char out[16384];
static size_t out_length;
static float confidence, probability;
static agent_session *session;

char *web_text(void) { return text; }
size_t web_text_capacity(void) { return sizeof text; }
const char *web_out(void) { return out; }
size_t web_out_length(void) { return out_length; }
float web_confidence(void) { return confidence; }
float web_probability(void) { return probability; }

/* NAME_call on text[0..len) with `threshold`: its status (NEEDLE_OK, NEEDLE_NO_CALL, an error),
 * or -100 when no arena could be had. */
int web_call(size_t len, float threshold) {
  if (!session) {
    const size_t align = agent_arena_align();
    const size_t size = (agent_arena_size() + align - 1) / align * align;
    void *arena = aligned_alloc(align, size);
    session = arena ? agent_open(arena, size) : NULL;
    if (!session)
      return -100;
  }
  out_length = 0;
  confidence = probability = 0.0f;
  const int status = agent_call(session, text, len, threshold, out, sizeof out, &out_length, &confidence);
  probability = agent_call_probability(session);
  return status;
}
