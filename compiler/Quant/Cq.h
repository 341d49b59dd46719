// CQ quantization of docs/cq-format.md: Walsh-Hadamard-rotated groups of 128 against one codebook.
#pragma once

#include "Support/RoundUp.h"
#include "runtime/needle_contract.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace needle::cq {

/// The group size: the runtime's, so the files needlec writes and the kernels agree.
constexpr int64_t kGroup = needle_rt::cq_group;

/// In-place normalized fast Walsh-Hadamard transform: x <- H x with H[a][b] =
/// (-1)^popcount(a & b) / sqrt(n). n is a power of two. O(n log n).
void fwht(float *x, int64_t n);

enum class CodebookKind { Needle, LloydMax };

/// "needle" or "lloyd-max", as the tools' --codebook flag spells it.
CodebookKind parseCodebookKind(std::string_view text);

/// The codebook for `bits` (2, 3 or 4) in unit-norm-group units, ascending.
std::vector<float> codebook(CodebookKind kind, int bits);

/// Rejects a codebook of the wrong size or not sorted ascending; errors name `source`.
void validateCodebook(std::span<const float> values, int bits, std::string_view source);

/// Index of the nearest codebook entry; a tie goes to the lower index.
uint8_t nearestIndex(float z, std::span<const float> codebook);

inline int64_t paddedCols(int64_t cols) { return roundUp(cols, kGroup); }
inline int64_t packedRowBytes(int64_t cols, int bits) { return paddedCols(cols) * bits / 8; }
inline int64_t groupsPerRow(int64_t cols) { return paddedCols(cols) / kGroup; }

/// Packs `indices` (a multiple of 8 of them) at `bits` each: little-endian within a byte for 2
/// and 4 bits, eight indices in three bytes (LSB first) for 3 bits.
void packIndices(std::span<const uint8_t> indices, int bits, uint8_t *out);
void unpackIndices(const uint8_t *packed, int64_t count, int bits, uint8_t *out);

/// A CQ matrix: packed indices [rows, packedRowBytes] and fp16 norms [rows, groupsPerRow].
struct Packed {
  std::vector<uint8_t> indices;
  std::vector<uint16_t> norms;
};

/// Quantizes w [rows, cols]. A group norm that overflows fp16 is an error naming `name`.
Packed quantize(std::span<const float> w, int64_t rows, int64_t cols, int bits, std::span<const float> codebook,
                std::string_view name);

/// Rows [rowBegin, rowEnd) in the rotated domain, codebook[index] * norm, into
/// out [(rowEnd - rowBegin), paddedCols]: the decoded rows are these times H per group.
void decodeRotatedRows(const uint8_t *indices, const uint16_t *norms, int64_t rowBegin, int64_t rowEnd, int64_t cols,
                       int bits, std::span<const float> codebook, float *out);

/// Decodes rows [rowBegin, rowEnd) into out [(rowEnd - rowBegin), cols].
void dequantizeRows(const uint8_t *indices, const uint16_t *norms, int64_t rowBegin, int64_t rowEnd, int64_t cols,
                    int bits, std::span<const float> codebook, float *out);

} // namespace needle::cq
