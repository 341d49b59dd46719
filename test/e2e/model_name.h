/* The compiled model's functions by the name needlec gave it: FN(_feed) is NEEDLE_NAME_feed, for
 * programs built with -DNEEDLE_NAME=<--name>; CAT(a, b) pastes after expanding, for programs
 * that link two models under names of their own. */
#ifndef NEEDLE_E2E_MODEL_NAME_H
#define NEEDLE_E2E_MODEL_NAME_H

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(x) CAT(NEEDLE_NAME, x)

#endif
