// ggml's Q2_K matvec on aarch64, for scripts/bench-arm.sh to count instructions under qemu: a
// rows x cols Q2_K matrix (84-byte blocks of 256 weights), then REPEATS matvecs of one token (the token quantized to
// Q8_K, then one vec_dot per row), as ggml's CPU backend computes a one-token MUL_MAT. Built
// against the peer copy of ggml in ../shared/peers, in the bench's cache only: the project never
// links ggml.
// Usage: ggml_q2k ROWS COLS REPEATS
#include "ggml-cpu.h"
#include "ggml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static float uniform(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / 16777216.0f - 0.5f;
}

int main(int argc, char **argv) {
  if (argc != 4)
    return fprintf(stderr, "usage: ggml_q2k ROWS COLS REPEATS\n"), 2;
  const int64_t rows = atoll(argv[1]), cols = atoll(argv[2]);
  const int repeats = atoi(argv[3]);
  ggml_cpu_init();
  uint32_t state = 1;
  float *x = malloc(sizeof(float) * cols), *y = malloc(sizeof(float) * rows);
  for (int64_t i = 0; i < cols; ++i)
    x[i] = uniform(&state);
  // Random codes and scales (quantizing would cost more instructions under qemu than the matvecs:
  // the count does not depend on the values), each 256-weight block's two fp16 factors (its last
  // 4 bytes: d, dmin) set to 1/16.
  const size_t row_bytes = ggml_row_size(GGML_TYPE_Q2_K, cols), blocks = row_bytes * rows / 84;
  uint8_t *q = malloc(row_bytes * rows), *xq = malloc(ggml_row_size(GGML_TYPE_Q8_K, cols));
  for (size_t i = 0; i < row_bytes * rows; ++i)
    q[i] = (uint8_t)(uniform(&state) * 256.0f + 128.0f);
  for (size_t b = 0; b < blocks; ++b)
    q[84 * b + 80] = q[84 * b + 82] = 0x00, q[84 * b + 81] = q[84 * b + 83] = 0x2C;
  const struct ggml_type_traits_cpu *q2k = ggml_get_type_traits_cpu(GGML_TYPE_Q2_K);
  const struct ggml_type_traits_cpu *q8k = ggml_get_type_traits_cpu(q2k->vec_dot_type);
  float checksum = 0.0f;
  for (int r = 0; r < repeats; ++r) {
    q8k->from_float(x, xq, cols);
    for (int64_t i = 0; i < rows; ++i)
      q2k->vec_dot((int)cols, y + i, 0, q + row_bytes * i, 0, xq, 0, 1);
    checksum += y[0] + y[rows - 1];
  }
  printf("checksum %g\n", checksum);
  return 0;
}
