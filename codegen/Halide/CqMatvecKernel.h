// Halide kernels for the object backend: the CQ matvec, generated at compile time for one
// matrix shape and one target, with its codebook built in. This library includes Halide 14 (on
// LLVM 14) and never an LLVM 19 or MLIR header (docs/architecture.md): it hands LLVM bitcode
// back as bytes, which the object printer loads into LLVM 19.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace needle {

struct CqMatvecShape {
  int64_t rows = 0, cols = 0;
  int bits = 0;
  std::vector<float> codebook; // 2^bits entries
};

/// LLVM bitcode of `int name(halide_buffer_t *packed, halide_buffer_t *norms, halide_buffer_t
/// *x_rot, halide_buffer_t *y)`, computing needle_rt::cq_matvec for `shape` on its weights in
/// the tiled layout (docs/targets.md, "Halide kernels"): rows in tiles of `tile` (rows must be a
/// multiple), packed[tile][byte][lane] and norms[tile][group][lane], so one vector load takes the
/// same byte of `tile` rows. Scheduled for `halideTarget` (a Halide target string such as
/// "x86-64-linux-avx2-fma"; needlec adds no_runtime, no_asserts and no_bounds_query). The
/// buffers' strides and extents are fixed at compile time.
std::string generateCqMatvec(const CqMatvecShape &shape, const std::string &halideTarget, int tile,
                             const std::string &name);

} // namespace needle
