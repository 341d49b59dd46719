// The tiled weight layout of the Halide CQ matvec kernels (docs/targets.md, "Halide kernels").
// Plain C++: unit-tested on its own (test/unit/TiledLayoutTest.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace needle {

/// `rows` row-major rows of `rowElements` elements of `elementBytes` bytes each, re-laid in tiles
/// of `tile` rows (rows a multiple of tile), each tile element-major: element j of row
/// t·tile + l goes to ((t·rowElements + j)·tile + l), so the same element of a tile's rows is
/// adjacent.
std::vector<uint8_t> tileRows(const uint8_t *rowMajor, int64_t rows, int64_t rowElements, int64_t elementBytes,
                              int64_t tile);

} // namespace needle
