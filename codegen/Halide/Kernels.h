// Halide kernels for the object backend, generated at compile time for one shape and one target:
// the CQ matvec (one token's and a batch's), its codebook built in, attention over a KV ring, and
// the Kronecker MLP. This library includes
// Halide 14 (on LLVM 14) and never an LLVM 19 or MLIR header (docs/architecture.md): it hands
// LLVM bitcode back as bytes, which the object printer loads into LLVM 19.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace needle {

/// A CQ matrix's width and codebook: its kernels serve any number of rows (a multiple of the
/// tile).
struct CqMatvecShape {
  int64_t cols = 0;
  int bits = 0;
  std::vector<float> codebook; // 2^bits entries
};

/// The ring's capacity and span come with the buffers: one kernel serves local and global blocks.
struct AttentionShape {
  int64_t heads = 0, kvHeads = 0, dqk = 0, dv = 0;
};

/// The length comes with the buffers.
struct HadamardShape {
  int64_t group = 0;
};

struct KronMlpShape {
  int64_t dModel = 0, n = 0, ba = 0, bb = 0;
};

/// The kernels of one object, compiled together: one Halide module, one pass of Halide's LLVM.
class HalideKernelSet {
public:
  /// `halideTarget` is a Halide target string such as "x86-64-linux-avx2-fma" (no_runtime,
  /// no_asserts and no_bounds_query are added); `lanes` is the f32 lanes of a kernel's loops.
  HalideKernelSet(std::string halideTarget, int lanes);
  ~HalideKernelSet();

  /// `int name(halide_buffer_t *packed, halide_buffer_t *norms, halide_buffer_t *x_rot,
  /// halide_buffer_t *y)`: needle_rt::cq_matvec for `shape` on its weights in the tiled layout
  /// (docs/targets.md, "Halide kernels"): rows in tiles of `lanes` (rows must be a multiple),
  /// packed[tile][byte][lane] and norms[tile][group][lane], so one vector load takes the same byte
  /// of a tile's rows. Strides and the width are fixed at compile time, the rows come with the
  /// buffers.
  void addCqMatvec(const CqMatvecShape &shape, const std::string &name);

  /// The same for n tokens at once (needle_rt::cq_matmul): x_rot and y are 2-D, (column, token),
  /// with one stride between tokens, n and the stride given by the buffers. Each group of a tile
  /// is decoded once for all n.
  void addCqMatmul(const CqMatvecShape &shape, const std::string &name);

  /// `int name(halide_buffer_t *q, halide_buffer_t *k_cache, halide_buffer_t *v_cache,
  /// int32_t kv_head, int32_t first_slot, int32_t count, halide_buffer_t *scores,
  /// halide_buffer_t *out)`: the reading half of needle_rt::attention for one query head of
  /// `shape` over ring slots first_slot..first_slot + count − 1 (no wrap) of its kv head: q [dqk],
  /// k_cache (slot, d, kv head) (needle_rt::attention's transposed keys), v_cache (d, kv head,
  /// slot), scores [count] (the caller's scratch), out [dv].
  void addAttention(const AttentionShape &shape, const std::string &name);

  /// `int name(z, cond, d1, d2, b2, d3, d4, w1a, w2a, w3a, w1b, w2b, w3b, p1, p2, out)`, each a
  /// halide_buffer_t: needle_rt::kron_mlp after kron_mlp_condition (z, cond [n]), out [d_model].
  void addKronMlp(const KronMlpShape &shape, const std::string &name);

  /// `int name(halide_buffer_t *in, halide_buffer_t *out)`: each group of in rotated into out,
  /// both [whole groups] (any number; in and out may be one buffer).
  void addHadamard(const HadamardShape &shape, const std::string &name);

  bool empty() const;

  /// LLVM bitcode (Halide's LLVM 14) defining every kernel added.
  std::string bitcode() const;

private:
  struct Modules;
  std::string target_;
  int lanes_;
  std::unique_ptr<Modules> modules_;
};

} // namespace needle
