// The tiled weight layout of the Halide CQ matvec kernels, against positions worked out by hand.
#include "codegen/Object/TiledLayout.h"

#include <gtest/gtest.h>

#include <numeric>

namespace needle {
namespace {

TEST(TiledLayout, BytesOfATileAreElementMajor) {
  // 4 rows of 3 bytes, byte value = 10·row + column; tiles of 2 rows.
  std::vector<uint8_t> rows(12);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j)
      rows[static_cast<size_t>(r * 3 + j)] = static_cast<uint8_t>(10 * r + j);
  const std::vector<uint8_t> want = {0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32};
  EXPECT_EQ(tileRows(rows.data(), 4, 3, 1, 2), want);
}

TEST(TiledLayout, MultiByteElementsMoveWhole) {
  // 2 rows of 2 two-byte elements (little-endian 0x0100 + 16·row + column); one tile of 2.
  const std::vector<uint8_t> rows = {0x00, 0x01, 0x01, 0x01, 0x10, 0x01, 0x11, 0x01};
  const std::vector<uint8_t> want = {0x00, 0x01, 0x10, 0x01, 0x01, 0x01, 0x11, 0x01};
  EXPECT_EQ(tileRows(rows.data(), 2, 2, 2, 2), want);
}

TEST(TiledLayout, TileOfOneIsTheIdentity) {
  std::vector<uint8_t> rows(24);
  std::iota(rows.begin(), rows.end(), 0);
  EXPECT_EQ(tileRows(rows.data(), 6, 4, 1, 1), rows);
}

TEST(TiledLayout, IsAPermutation) {
  std::vector<uint8_t> rows(16 * 5);
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<uint8_t> tiled = tileRows(rows.data(), 16, 5, 1, 8);
  EXPECT_NE(tiled, rows);
  std::sort(tiled.begin(), tiled.end());
  EXPECT_EQ(tiled, rows);
}

} // namespace
} // namespace needle
