#include "codegen/Halide/Bitcode.h"
#include "codegen/Halide/Kernels.h"

namespace needle {

namespace {

using namespace Halide;

constexpr int kGroup = 128; // the CQ group size (docs/cq-format.md)

/// codebook[index] as a chain of selects on constants: a vector of lanes looks its values up
/// with compares and blends, no gather.
Expr codebookAt(const Expr &index, const std::vector<float> &codebook) {
  Expr value = codebook.back();
  for (int i = static_cast<int>(codebook.size()) - 2; i >= 0; --i)
    value = select(index == i, codebook[static_cast<size_t>(i)], value);
  return value;
}

} // namespace

void HalideKernelSet::addCqMatvec(const CqMatvecShape &shape, const std::string &name) {
  const int tile = lanes_;
  const int rows = static_cast<int>(shape.rows), bits = shape.bits;
  const int groups = static_cast<int>((shape.cols + kGroup - 1) / kGroup), padded = groups * kGroup;
  const int rowBytes = padded * bits / 8, groupBytes = kGroup * bits / 8, tiles = rows / tile;
  // Tiled layouts (cqTileLayout): packed(lane, byte, tile), norms(lane, group, tile).
  ImageParam packed(UInt(8), 3, "packed"), norms(UInt(16), 3, "norms"), x(Float(32), 1, "x_rot");
  Var lane("lane"), g("g"), t("t"), r("r");

  // Σ_i c[idx] x[g·128 + i] over one group for `tile` rows at once: each byte of a row holds
  // the indices of consecutive columns (2 and 4 bits: 8/bits per byte, little-endian; 3 bits:
  // runs of 8 indices in 3 bytes), so a vector of bytes across rows shares one x per index.
  Func dot("dot");
  dot(lane, g, t) = 0.0f;
  if (bits == 3) {
    RDom run(0, 8, 0, groupBytes / 3, "run"); // index within the run, run
    const Expr byte = g * groupBytes + run.y * 3;
    const Expr word = cast<uint32_t>(packed(lane, byte, t)) | (cast<uint32_t>(packed(lane, byte + 1, t)) << 8) |
                      (cast<uint32_t>(packed(lane, byte + 2, t)) << 16);
    const Expr index = cast<int>((word >> cast<uint32_t>(3 * run.x)) & 7);
    dot(lane, g, t) += codebookAt(index, shape.codebook) * x(g * kGroup + run.y * 8 + run.x);
    dot.update().unroll(run.x);
  } else {
    const int perByte = 8 / bits;
    RDom k(0, perByte, 0, groupBytes, "k"); // index within the byte, byte
    const Expr byte = packed(lane, g * groupBytes + k.y, t);
    const Expr index = cast<int>((byte >> cast<uint8_t>(bits * k.x)) & ((1 << bits) - 1));
    dot(lane, g, t) += codebookAt(index, shape.codebook) * x(g * kGroup + k.y * perByte + k.x);
    dot.update().unroll(k.x);
  }
  Func sum("sum"), y("y");
  RDom gs(0, groups, "gs");
  sum(lane, t) = 0.0f;
  sum(lane, t) += dot(lane, gs, t) * cast<float>(reinterpret(Float(16), norms(lane, gs, t)));
  y(r) = sum(r % tile, r / tile);

  // A tile of rows per vector (or two); the group sums of a tile live in registers and on the
  // stack.
  y.split(r, t, lane, tile, TailStrategy::RoundUp).vectorize(lane);
  sum.compute_at(y, t).vectorize(lane).update().vectorize(lane);
  dot.compute_at(y, t).vectorize(lane).update().vectorize(lane);

  packed.dim(0).set_bounds(0, tile).set_stride(1);
  packed.dim(1).set_bounds(0, rowBytes).set_stride(tile);
  packed.dim(2).set_bounds(0, tiles).set_stride(tile * rowBytes);
  norms.dim(0).set_bounds(0, tile).set_stride(1);
  norms.dim(1).set_bounds(0, groups).set_stride(tile);
  norms.dim(2).set_bounds(0, tiles).set_stride(tile * groups);
  x.dim(0).set_bounds(0, padded).set_stride(1);
  y.output_buffer().dim(0).set_bounds(0, rows).set_stride(1);

  modules_->modules.push_back(kernelModule(y, {packed, norms, x}, target_, name));
}

} // namespace needle
