#include "codegen/Halide/Bitcode.h"
#include "codegen/Halide/Kernels.h"

#include "Quant/Cq.h"

namespace needle {

namespace {

using namespace Halide;

constexpr int kGroup = static_cast<int>(needle::cq::kGroup); // Halide's expressions are int

/// codebook[index] as a chain of selects on constants: a vector of lanes looks its values up
/// with compares and blends, no gather.
Expr codebookAt(const Expr &index, const std::vector<float> &codebook) {
  Expr value = codebook.back();
  for (int i = static_cast<int>(codebook.size()) - 2; i >= 0; --i)
    value = select(index == i, codebook[static_cast<size_t>(i)], value);
  return value;
}

/// The index of column k of a tile's rows (lane), as a packed row holds it (spec/cq.md;
/// needle_rt::cq_group_decode).
Expr indexAt(const ImageParam &packed, const Expr &lane, const Expr &k, const Expr &t, int bits) {
  if (bits == 3) {
    const Expr byte = (k / 8) * 3;
    const Expr word = cast<uint32_t>(packed(lane, byte, t)) | (cast<uint32_t>(packed(lane, byte + 1, t)) << 8) |
                      (cast<uint32_t>(packed(lane, byte + 2, t)) << 16);
    return cast<int>((word >> cast<uint32_t>(3 * (k % 8))) & 7);
  }
  const int perByte = 8 / bits;
  return cast<int>((packed(lane, k / perByte, t) >> cast<uint8_t>(bits * (k % perByte))) & ((1 << bits) - 1));
}

/// The tiled layouts' bounds and strides (docs/targets.md): packed(lane, byte, tile),
/// norms(lane, group, tile). The number of tiles (the rows) is the buffers': one kernel serves
/// every matrix of its width.
void setTiledBounds(ImageParam &packed, ImageParam &norms, int tile, int rowBytes, int groups) {
  packed.dim(0).set_bounds(0, tile).set_stride(1);
  packed.dim(1).set_bounds(0, rowBytes).set_stride(tile);
  packed.dim(2).set_min(0).set_stride(tile * rowBytes);
  norms.dim(0).set_bounds(0, tile).set_stride(1);
  norms.dim(1).set_bounds(0, groups).set_stride(tile);
  norms.dim(2).set_min(0).set_stride(tile * groups);
}

} // namespace

void HalideKernelSet::addCqMatmul(const CqMatvecShape &shape, const std::string &name) {
  const int tile = lanes_, bits = shape.bits;
  const int groups = static_cast<int>((shape.cols + kGroup - 1) / kGroup), padded = groups * kGroup;
  ImageParam packed(UInt(8), 3, "packed"), norms(UInt(16), 3, "norms"), x(Float(32), 2, "x_rot");
  Var lane("lane"), k("k"), g("g"), t("t"), j("j"), r("r");

  // A tile's weights, decoded one group at a time and used for every token j.
  Func weight("weight"), dot("dot"), sum("sum"), y("y");
  weight(lane, k, t) = codebookAt(indexAt(packed, lane, k, t, bits), shape.codebook);
  RDom i(0, kGroup, "i"), gs(0, groups, "gs");
  dot(lane, g, t, j) = 0.0f;
  dot(lane, g, t, j) += weight(lane, g * kGroup + i, t) * x(g * kGroup + i, j);
  sum(lane, t, j) = 0.0f;
  sum(lane, t, j) += dot(lane, gs, t, j) * cast<float>(reinterpret(Float(16), norms(lane, gs, t)));
  y(r, j) = sum(r % tile, r / tile, j);

  // Per tile of rows and run of up to kTokens tokens (their sums stay on the stack, whatever n):
  // per group, decode it once (a tile x 128 block on the stack), then one vector of sums per
  // token.
  constexpr int kTokens = 8;
  Var jo("jo"), ji("ji");
  y.split(r, t, lane, tile, TailStrategy::RoundUp)
      .split(j, jo, ji, kTokens, TailStrategy::GuardWithIf)
      .reorder(lane, ji, jo, t)
      .vectorize(lane);
  sum.compute_at(y, jo).bound_storage(j, kTokens).vectorize(lane);
  sum.update().reorder(lane, j, gs, t).vectorize(lane);
  weight.compute_at(sum, gs).vectorize(lane);
  dot.compute_at(sum, j).vectorize(lane);
  dot.update().vectorize(lane).unroll(i, 4);

  setTiledBounds(packed, norms, tile, padded * bits / 8, groups);
  x.dim(0).set_bounds(0, padded).set_stride(1);
  y.output_buffer().dim(0).set_min(0).set_stride(1);
  y.output_buffer().dim(1).set_stride(x.dim(1).stride());

  modules_->modules.push_back(kernelModule(y, {packed, norms, x}, target_, name));
}

void HalideKernelSet::addCqMatvec(const CqMatvecShape &shape, const std::string &name) {
  const int tile = lanes_, bits = shape.bits;
  const int groups = static_cast<int>((shape.cols + kGroup - 1) / kGroup), padded = groups * kGroup;
  const int rowBytes = padded * bits / 8, groupBytes = kGroup * bits / 8;
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

  setTiledBounds(packed, norms, tile, rowBytes, groups);
  x.dim(0).set_bounds(0, padded).set_stride(1);
  y.output_buffer().dim(0).set_min(0).set_stride(1);

  modules_->modules.push_back(kernelModule(y, {packed, norms, x}, target_, name));
}

} // namespace needle
