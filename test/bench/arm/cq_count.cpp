// One CQ kernel of the runtime on a rows x cols matrix of random codes, REPEATS times for one
// token (or a run of TOKENS), for scripts/bench-arm.sh to count its instructions under qemu (the counts of two run
// lengths subtracted: setup cancels out). The matrix is laid out as needlec lays it for the kernel
// (codegen/Select/WeightLayouts.h).
//
//   cq_count KERNEL ROWS COLS REPEATS [TOKENS]
//   KERNEL: exact2 and exact4 (CQ2 and CQ4, cq_matmul_lut16_exact_neon), x8exact4 (CQ4 on CqX8,
//           cq_matmul_x8_exact_neon, for matrices of rows that do not fill tiles of 16), fast2
//           and fast4 (the fast mode's NEON kernels), file2 and file4 (the portable kernel on the
//           file's layout)
#include "codegen/Select/WeightLayouts.h"
#include "needle_runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if !NEEDLE_RT_NEON_KERNELS
#error "cq_count measures the aarch64 NEON kernels: build it for aarch64"
#endif

namespace {

using Kernel = void (*)(const uint8_t *, const uint16_t *, const float *, int, int64_t, int64_t, const float *, float *,
                        int64_t, int64_t);

std::vector<uint16_t> halves(const std::vector<uint8_t> &bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  std::memcpy(out.data(), bytes.data(), 2 * out.size());
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: cq_count exact2|exact4|x8exact4|fast2|fast4|file2|file4 ROWS COLS REPEATS [TOKENS]\n");
    return 2;
  }
  const std::string kernel = argv[1];
  const int64_t rows = std::atoll(argv[2]), cols = std::atoll(argv[3]), groups = (cols + 127) / 128;
  const int repeats = std::atoi(argv[4]), bits = kernel.back() - '0';
  const int64_t tokens = argc == 6 ? std::atoll(argv[5]) : 1, stride = std::max(groups * 128, rows);
  if ((bits != 2 && bits != 4) || rows <= 0 || cols <= 0 || repeats <= 0 || tokens <= 0) {
    std::fprintf(stderr, "cq_count: bad arguments\n");
    return 2;
  }
  uint32_t state = 1;
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  std::vector<uint8_t> packed(static_cast<size_t>(rows * groups * 16 * bits)), norms(2 * rows * groups);
  for (uint8_t &byte : packed)
    byte = static_cast<uint8_t>(next() >> 24);
  for (size_t i = 0; i < norms.size(); i += 2) // fp16 in [0.5, 2)
    norms[i] = static_cast<uint8_t>(next() >> 24), norms[i + 1] = static_cast<uint8_t>(0x38 + (next() >> 31) * 4);
  std::vector<float> codebook(16), x(static_cast<size_t>(stride * tokens)), y(static_cast<size_t>(stride * tokens));
  for (int i = 0; i < 16; ++i)
    codebook[static_cast<size_t>(i)] = -0.25f + 0.5f * static_cast<float>(i) / 15.0f;
  for (float &v : x)
    v = static_cast<float>(next() >> 8) / 16777216.0f - 0.5f;

  Kernel run = needle_rt::cq_matmul;
  std::vector<uint8_t> laid = packed, laidNorms = norms;
  if (kernel == "x8exact4") {
    run = needle_rt::cq_matmul_x8_exact_neon;
    laid = needle::interleaveCqX8(packed.data(), rows, groups);
    laidNorms = needle::blockCqX8Norms(norms.data(), rows, groups);
  } else if (kernel != "file2" && kernel != "file4") {
    run = kernel == "exact2" || kernel == "exact4" ? needle_rt::cq_matmul_lut16_exact_neon
                                                   : needle_rt::cq_matmul_lut16_fast; // NEON on aarch64
    laid = needle::tileCqLut16(packed.data(), rows, groups, bits);
    laidNorms = needle::blockCqLut16Norms(norms.data(), rows, groups);
  }
  const std::vector<uint16_t> n16 = halves(laidNorms);
  float checksum = 0.0f;
  for (int r = 0; r < repeats; ++r) {
    run(laid.data(), n16.data(), codebook.data(), bits, rows, cols, x.data(), y.data(), stride, tokens);
    checksum += y[0] + y[static_cast<size_t>(rows - 1)];
  }
  std::printf("checksum %g\n", static_cast<double>(checksum));
  return 0;
}
