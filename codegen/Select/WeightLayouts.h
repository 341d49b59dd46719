// The in-memory layouts of CQ weights that kernels want instead of the file's (docs/targets.md,
// "Weight layouts"), and the re-laying of a KernelProgram's weights into them. Plain C++:
// unit-tested on its own (test/unit/WeightLayoutsTest.cpp).
#pragma once

#include "codegen/Lower/KernelProgram.h"

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace needle {

/// How the CQ matvecs take their activations: `Float`, the exact mode (the default: f32 inputs,
/// f32 sums, within the reference's tolerance); `Int8`, the fast mode (needlec --activations
/// int8: per group, the products of the CQ2/CQ4 codebook with the inputs as int8 lookup tables,
/// docs/targets.md "The fast mode"). CQ3 matvecs, and CQ4 ones of fewer than 64 rows
/// (kFastCq4Rows), stay exact in both.
enum class Activations { Float, Int8 };

/// `rows` row-major rows of `rowElements` elements of `elementBytes` bytes each, re-laid in tiles
/// of `tile` rows (rows a multiple of tile), each tile element-major: element j of row
/// t·tile + l goes to ((t·rowElements + j)·tile + l), so the same element of a tile's rows is
/// adjacent. The Halide CQ kernels' layout.
std::vector<uint8_t> tileRows(const uint8_t *rowMajor, int64_t rows, int64_t rowElements, int64_t elementBytes,
                              int64_t tile);

/// The CqX8 layout of a CQ4 matrix of `rows` rows of `groups` groups (needle_rt::CqX8,
/// docs/targets.md): each group's 128 indices, packed little-endian within the bytes in the
/// file, are re-laid for the AVX2 kernel's decoding (column 64v + 32h + 8k + l at nibble h of
/// byte CqX8::cq4_byte(k, l) of vector v); and the groups are cut into blocks of 4 (the last may
/// hold fewer), each block holding every row's groups in it, row after row.
std::vector<uint8_t> interleaveCqX8(const uint8_t *packed, int64_t rows, int64_t groups);

/// The norms [rows][groups] (fp16) of a matrix in the CqX8 layout's block order.
std::vector<uint8_t> blockCqX8Norms(const uint8_t *norms, int64_t rows, int64_t groups);

/// The CqLut16 layout of a CQ2 or CQ4 matrix (needle_rt::CqLut16, docs/targets.md), the fast
/// mode's (and the exact mode's CQ2): units of 4/bits columns with 4-bit codes (their indices, the first lowest); rows
/// in tiles of 16 (the last padded with zero codes); a tile's group is 8·bits chunks of 32 bytes, byte 16·h + r of
/// chunk q holding row r's codes of units 4q + h (low nibble) and 4q + 2 + h (high); the groups in blocks of 4, each
/// block holding every tile's groups in it, tile after tile.
std::vector<uint8_t> tileCqLut16(const uint8_t *packed, int64_t rows, int64_t groups, int bits);

/// The CqLutDword layout of a CQ2 or CQ4 matrix (needle_rt::CqLutDword, docs/targets.md), the
/// fast mode's with AVX-512 VBMI and VNNI and the object's exact CQ4 with AVX-512F: CqLut16's units, tiles and blocks
/// (and its norms, blockCqLut16Norms), a tile's group cut into 4·bits chunks of 64 bytes, bytes 4r..4r+3 of chunk m
/// holding row r's codes of units 8m + b (low nibble of byte 4r + b) and 8m + 4 + b (high).
std::vector<uint8_t> tileCqLutDword(const uint8_t *packed, int64_t rows, int64_t groups, int bits);

/// The norms [rows][groups] (fp16) of a matrix in the CqLut16 layout's order: 16 per tile's
/// group (zeros for the last tile's padding rows).
std::vector<uint8_t> blockCqLut16Norms(const uint8_t *norms, int64_t rows, int64_t groups);

/// The CqLutChunkMajor layout of a CQ2 or CQ4 matrix (needle_rt::CqLutChunkMajor, docs/targets.md),
/// the object's exact CQ2 with AVX-512F: CqLutDword's 64-byte chunks in slabs of up to 64 tiles,
/// slab after slab, and within a slab group by group, chunk by chunk, tile after tile.
std::vector<uint8_t> tileCqLutChunkMajor(const uint8_t *packed, int64_t rows, int64_t groups, int bits);

/// The norms [rows][groups] (fp16) of a matrix in the CqLutChunkMajor layout's order: 16 per
/// tile's group (zeros for the last tile's padding rows), slab by slab, group by group, tile after
/// tile.
std::vector<uint8_t> chunkMajorNorms(const uint8_t *norms, int64_t rows, int64_t groups);

/// Whether `call` is a CQ matvec, one token's or a batch's, on the file's layout: their first
/// arguments are (packed, norms, codebook, bits, rows, cols, x_rot, y).
bool isCqMatvec(const KernelCall &call);

/// The kernel that gathers a row of a CQ matrix from the panels its products were cut into,
/// whatever each panel's layout (needle_rt::cq_row_panels; codegen/Select/ParallelStages.h).
inline constexpr std::string_view kGatherFromPanels = "cq_row_panels";

/// A panel's layout as cq_row_panels reads it: needle_rt::CqPanelLayout, and the tile of
/// cq_panel_tiled.
struct PanelLayout {
  int64_t layout = 0, tile = 0;
};

/// How a kernel wants a CQ matrix's weights: new bytes for its packed indices and for its norms,
/// from the call and the file's bytes, and how a row is then read from them.
struct CqRelayout {
  std::function<std::vector<uint8_t>(const KernelCall &, const uint8_t *packed)> packed;
  std::function<std::vector<uint8_t>(const KernelCall &, const uint8_t *norms)> norms;
  std::function<PanelLayout(const KernelCall &)> panel;
};

/// Re-lays the weights of the CQ matvec calls `chosen` picks and points the calls at them. A
/// matrix several chosen calls share is re-laid once; one that any other call (or argument) also
/// reads keeps its bytes, and the chosen calls read a copy appended to the weights (as they do
/// when the new bytes take more room than the file's). A cq_row_panels gather is no other reader:
/// it is pointed at the panels it reads, wherever and however they are re-laid.
void relayCqWeights(KernelProgram &program, const std::function<bool(const KernelCall &)> &chosen,
                    const CqRelayout &relayout);

/// Points every CQ4 matvec of `program` at the CqX8 layout and at `matmul`, the kernel that reads
/// it (needle_rt::cq_matmul_x8_exact's signature); a one-token call becomes a batch of one.
void useCqX8Layout(KernelProgram &program, const std::string &matmul);

/// Which of a width's CQ matrices a layout takes, by their rows: a multiple of `multiple`, and at
/// least `atLeast`.
struct CqRows {
  int64_t multiple = 1, atLeast = 0;
};

/// The matrices whose rows fill whole CqLut16 tiles (no padding rows to store and stream).
constexpr CqRows kWholeCqLutTiles{16, 0};

/// The CQ4 matrices the fast mode takes: 64 rows or more. A narrower one stays exact, since its
/// tables (16 entries per column and token) cost more than its weights, as the lanes' 4-row
/// mixing projections measured (docs/performance-log.md).
constexpr CqRows kFastCq4Rows{1, 64};

// The useCq*Layout functions take only the CQ matvecs still on the file's layout (isCqMatvec:
// still named cq_matvec or cq_matmul), so a printer chains them: the first that takes a matrix
// keeps it.

/// Points every CQ matvec of `program` at one of the widths `bits` whose rows fit `rows` (2 in
/// the exact mode, and 4 in whole tiles of 16 with AVX-512; the fast mode's: useFastCqLayout) at
/// the CqLut16 layout and at `matmul`, its kernel (needle_rt::cq_matmul_lut16_fast's or
/// cq_matmul_lut16_exact's); a one-token call becomes a batch of one.
void useCqLut16Layout(KernelProgram &program, const std::vector<int> &bits, const std::string &matmul,
                      CqRows rows = {});

/// Points every CQ matvec of `program` at one of the widths `bits` whose rows fit `rows` at the
/// CqLutDword layout and at `matmul`, its kernel (needle_rt::cq_matmul_dword_fast_avx512vnni's
/// signature: the fast mode's with VNNI, or the object's exact CQ4 with AVX-512F,
/// cq_matmul_dword_exact_avx512); a one-token call becomes a batch of one.
void useCqLutDwordLayout(KernelProgram &program, const std::vector<int> &bits, const std::string &matmul,
                         CqRows rows = {});

/// Points every CQ2 matvec of `program` still on the file's layout at CqLutChunkMajor and at
/// `matmul`, its kernel (the object's exact CQ2 with AVX-512F, cq_matmul_chunkmajor_exact_avx512); a
/// one-token call becomes a batch of one.
void useCqLutChunkMajorLayout(KernelProgram &program, const std::string &matmul);

/// useCqLut16Layout or useCqLutDwordLayout.
using CqLutLayoutUse = void (*)(KernelProgram &, const std::vector<int> &, const std::string &, CqRows);

/// The fast mode's matvecs (--activations int8): every CQ2 one and the CQ4 ones of kFastCq4Rows,
/// pointed at `use`'s layout and at `matmul`, its kernel. The rest stay on the file's layout for
/// the exact mode's choices that follow.
void useFastCqLayout(KernelProgram &program, CqLutLayoutUse use, const std::string &matmul);

} // namespace needle
