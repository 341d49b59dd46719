#include "codegen/Object/TiledLayout.h"

#include <cstring>

namespace needle {

std::vector<uint8_t> tileRows(const uint8_t *rowMajor, int64_t rows, int64_t rowElements, int64_t elementBytes,
                              int64_t tile) {
  std::vector<uint8_t> tiled(static_cast<size_t>(rows * rowElements * elementBytes));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < rowElements; ++j)
      std::memcpy(&tiled[static_cast<size_t>((((r / tile) * rowElements + j) * tile + r % tile) * elementBytes)],
                  rowMajor + (r * rowElements + j) * elementBytes, static_cast<size_t>(elementBytes));
  return tiled;
}

} // namespace needle
