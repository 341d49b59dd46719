// The weight layouts kernels want (the Halide kernels' tiles, CqX8's interleaved CQ4, CqLut16 for
// the fast mode and the exact mode's CQ2),
// against positions worked out by hand, and the re-laying of a program's weights into them.
#include "codegen/Select/WeightLayouts.h"
#include "runtime/needle_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <tuple>

namespace needle {
namespace {

TEST(WeightLayouts, TiledBytesOfATileAreElementMajor) {
  // 4 rows of 3 bytes, byte value = 10·row + column; tiles of 2 rows.
  std::vector<uint8_t> rows(12);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j)
      rows[static_cast<size_t>(r * 3 + j)] = static_cast<uint8_t>(10 * r + j);
  const std::vector<uint8_t> want = {0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32};
  EXPECT_EQ(tileRows(rows.data(), 4, 3, 1, 2), want);
}

TEST(WeightLayouts, TiledMultiByteElementsMoveWhole) {
  // 2 rows of 2 two-byte elements (little-endian 0x0100 + 16·row + column); one tile of 2.
  const std::vector<uint8_t> rows = {0x00, 0x01, 0x01, 0x01, 0x10, 0x01, 0x11, 0x01};
  const std::vector<uint8_t> want = {0x00, 0x01, 0x10, 0x01, 0x01, 0x01, 0x11, 0x01};
  EXPECT_EQ(tileRows(rows.data(), 2, 2, 2, 2), want);
}

TEST(WeightLayouts, TiledTileOfOneIsTheIdentity) {
  std::vector<uint8_t> rows(24);
  std::iota(rows.begin(), rows.end(), 0);
  EXPECT_EQ(tileRows(rows.data(), 6, 4, 1, 1), rows);
}

TEST(WeightLayouts, TiledIsAPermutation) {
  std::vector<uint8_t> rows(16 * 5);
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<uint8_t> tiled = tileRows(rows.data(), 16, 5, 1, 8);
  EXPECT_NE(tiled, rows);
  std::sort(tiled.begin(), tiled.end());
  EXPECT_EQ(tiled, rows);
}

/// The file's CQ4 packing of `indices` (2 per byte, little-endian within the byte).
std::vector<uint8_t> packCq4(const std::vector<unsigned> &indices) {
  std::vector<uint8_t> packed(indices.size() / 2, 0);
  for (size_t k = 0; k < indices.size(); ++k)
    packed[k / 2] |= static_cast<uint8_t>(indices[k] << (4 * (k % 2)));
  return packed;
}

TEST(WeightLayouts, CqX8BlocksOfFourGroupsRowAfterRow) {
  // CQ4, 2 rows of 6 groups: block 0 holds groups 0-3 of row 0, then of row 1; block 1 groups
  // 4-5 of row 0, then of row 1. Every index of group (r, g) is r + g (one value per group, which
  // interleaving keeps: all its bytes read the same), norm (r, g) is 10r + g.
  const int64_t rows = 2, groups = 6;
  std::vector<unsigned> indices;
  std::vector<uint8_t> norms;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      indices.insert(indices.end(), 128, static_cast<unsigned>(r + g));
      norms.push_back(static_cast<uint8_t>(10 * r + g));
      norms.push_back(0);
    }
  const std::vector<uint8_t> packed = interleaveCqX8(packCq4(indices).data(), rows, groups);
  const std::vector<uint8_t> blocked = blockCqX8Norms(norms.data(), rows, groups);
  const int want[][2] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1},
                         {1, 2}, {1, 3}, {0, 4}, {0, 5}, {1, 4}, {1, 5}}; // (row, group) at each place
  for (size_t place = 0; place < 12; ++place) {
    const auto [r, g] = want[place];
    EXPECT_EQ(blocked[2 * place], 10 * r + g) << place;
    EXPECT_EQ(blocked[2 * place + 1], 0) << place;
    const uint8_t byte = static_cast<uint8_t>((r + g) * 0x11); // two equal 4-bit indices
    for (size_t i = 0; i < 64; ++i)
      EXPECT_EQ(packed[64 * place + i], byte) << place;
  }
}

/// A CQ matvec call on (packed, norms) at the given weight offsets, rows x 128 columns.
KernelCall cqCall(const std::string &kernel, int64_t packed, int64_t norms, int bits, int64_t rows) {
  return {kernel,
          {KernelArg::weight(packed, "uint8_t"), KernelArg::weight(norms, "uint16_t"),
           KernelArg::of(KernelArg::Kind::Codebook, bits), KernelArg::i32(bits), KernelArg::i64(rows),
           KernelArg::i64(128), KernelArg::arena(0), KernelArg::arena(512)},
          ""};
}

/// A program of one stage of `calls` on weights 0, 1, 2, ...: byte i is i % 251.
KernelProgram programOf(std::vector<KernelCall> calls, int64_t bytes) {
  KernelProgram program;
  program.rungs[0].step.push_back({StepStage::Kind::EachToken, std::move(calls)});
  program.weights.resize(static_cast<size_t>(bytes));
  for (size_t i = 0; i < program.weights.size(); ++i)
    program.weights[i] = static_cast<uint8_t>(i % 251);
  return program;
}

/// A relayout that reverses the packed bytes of a call's matrix and keeps its norms as they are.
CqRelayout reversed() {
  CqRelayout relayout;
  relayout.packed = [](const KernelCall &call, const uint8_t *packed) {
    std::vector<uint8_t> out(packed, packed + call.args[4].value * 32 * call.args[3].value / 2);
    std::reverse(out.begin(), out.end());
    return out;
  };
  relayout.norms = [](const KernelCall &call, const uint8_t *norms) {
    return std::vector<uint8_t>(norms, norms + 2 * call.args[4].value);
  };
  relayout.panel = [](const KernelCall &) { return PanelLayout{needle_rt::cq_panel_lut16}; };
  return relayout;
}

TEST(WeightLayouts, RelayInPlaceOnceForCallsSharingAMatrix) {
  // Two chosen calls on one 2-row CQ2 matrix (64 packed bytes at 0, norms at 64).
  KernelProgram program = programOf({cqCall("cq_matvec", 0, 64, 2, 2), cqCall("cq_matmul", 0, 64, 2, 2)}, 128);
  const std::vector<uint8_t> before = program.weights;
  relayCqWeights(program, [](const KernelCall &) { return true; }, reversed());
  ASSERT_EQ(program.weights.size(), before.size()); // in place: nothing else reads them
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(program.weights[static_cast<size_t>(i)], before[static_cast<size_t>(63 - i)]);
  for (const KernelCall &call : program.rungs[0].step[0].calls) {
    EXPECT_EQ(call.args[0].value, 0);
    EXPECT_EQ(call.args[1].value, 64);
  }
}

TEST(WeightLayouts, RelayCopiesAMatrixOthersRead) {
  // cq_row reads the matrix too (a tied embedding): it keeps the file's bytes, the matvec reads a
  // re-laid copy appended at the next 64-byte boundary.
  KernelCall row{"cq_row", {KernelArg::weight(0, "uint8_t"), KernelArg::weight(64, "uint16_t")}, ""};
  KernelProgram program = programOf({cqCall("cq_matvec", 0, 64, 2, 2), row}, 100);
  const std::vector<uint8_t> before = program.weights;
  relayCqWeights(program, [](const KernelCall &call) { return call.kernel == "cq_matvec"; }, reversed());
  ASSERT_EQ(program.weights.size(), 128u + 64u + 4u);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), program.weights.begin()));
  const KernelCall &matvec = program.rungs[0].step[0].calls[0];
  EXPECT_EQ(matvec.args[0].value, 128);
  EXPECT_EQ(matvec.args[1].value, 192); // the norms, as they were, copied too
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(program.weights[static_cast<size_t>(128 + i)], before[static_cast<size_t>(63 - i)]);
  EXPECT_EQ(program.rungs[0].step[0].calls[1].args[0].value, 0);
}

TEST(WeightLayouts, RelayPointsAGatherAtThePanelsItReads) {
  // A matrix of two 2-row CQ2 panels (packed at 0 and 64, norms at 128 and 136), read by two
  // matvecs and by a cq_row_panels gather: both panels are re-laid in place, and the gather
  // follows them (their layout; the same offsets).
  KernelArg packed = KernelArg::of(KernelArg::Kind::PointerList), norms = packed;
  packed.pointers = {KernelArg::weight(0, "uint8_t"), KernelArg::weight(64, "uint8_t")};
  norms.pointers = {KernelArg::weight(128, "uint16_t"), KernelArg::weight(136, "uint16_t")};
  KernelArg panels = KernelArg::of(KernelArg::Kind::Int64List);
  panels.ints = {2, needle_rt::cq_panel_file, 0, 2, needle_rt::cq_panel_file, 0};
  const KernelCall gather{std::string(kGatherFromPanels),
                          {packed, norms, panels, KernelArg::i64(2), KernelArg::of(KernelArg::Kind::Codebook, 2),
                           KernelArg::i32(2), KernelArg::of(KernelArg::Kind::Token), KernelArg::i64(128),
                           KernelArg::arena(0)},
                          ""};
  KernelProgram program =
      programOf({cqCall("cq_matvec", 0, 128, 2, 2), cqCall("cq_matvec", 64, 136, 2, 2), gather}, 144);
  const std::vector<uint8_t> before = program.weights;
  relayCqWeights(program, [](const KernelCall &call) { return call.kernel == "cq_matvec"; }, reversed());
  ASSERT_EQ(program.weights.size(), before.size()); // no copy for the gather
  EXPECT_EQ(program.weights[0], before[63]);
  EXPECT_EQ(program.weights[64], before[127]);
  const KernelCall &moved = program.rungs[0].step[0].calls[2];
  EXPECT_EQ(moved.args[0].pointers[0].value, 0);
  EXPECT_EQ(moved.args[0].pointers[1].value, 64);
  EXPECT_EQ(moved.args[1].pointers[1].value, 136);
  const std::vector<int64_t> want = {2, needle_rt::cq_panel_lut16, 0, 2, needle_rt::cq_panel_lut16, 0};
  EXPECT_EQ(moved.args[2].ints, want);
}

/// A CQ matrix of `rows` rows of `groups` groups at `bits`, in the file's layout: random indices
/// and random finite fp16 norms.
struct RandomCq {
  int bits;
  int64_t rows, groups;
  std::vector<uint8_t> packed, norms;
  std::vector<unsigned> indices; // [rows][groups·128]

  RandomCq(int bits, int64_t rows, int64_t groups, unsigned seed) : bits(bits), rows(rows), groups(groups) {
    std::mt19937 random(seed);
    packed.assign(static_cast<size_t>(rows * groups * 16 * bits), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < 128 * groups; ++c) { // a little-endian bit stream (CQ3's runs of 8 in 3 bytes too)
        indices.push_back(static_cast<unsigned>(random() % (1u << bits)));
        for (int b = 0; b < bits; ++b) {
          const int64_t bit = (r * 128 * groups + c) * bits + b;
          packed[static_cast<size_t>(bit / 8)] |= static_cast<uint8_t>(((indices.back() >> b) & 1u) << (bit % 8));
        }
      }
      for (int64_t g = 0; g < groups; ++g) {
        const uint16_t half = static_cast<uint16_t>(0x3000 + random() % 0x1000); // 0.125 to 0.25
        norms.push_back(static_cast<uint8_t>(half & 0xff));
        norms.push_back(static_cast<uint8_t>(half >> 8));
      }
    }
  }
  /// Rows [first, first + count) in the file's layout: packed, then norms.
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> panel(int64_t first, int64_t count) const {
    const int64_t rowBytes = 16 * bits * groups;
    return {{packed.begin() + first * rowBytes, packed.begin() + (first + count) * rowBytes},
            {norms.begin() + 2 * first * groups, norms.begin() + 2 * (first + count) * groups}};
  }
};

TEST(WeightLayouts, CqRowPanelsReadsEveryRowOfEveryLayout) {
  // 24 rows of 5 groups cut into panels of 20 and 4 rows (CqLut16's second tile padded; 2 tiles of
  // a chunk-major slab; Halide tiles of 4), each panel re-laid alike: every row comes back as
  // c[idx]·n16 from the panels, exactly.
  const float codebook[16] = {-1.5f, -0.75f, -0.25f, 0.125f, 0.3f,  0.6f, 0.9f,  1.2f,
                              -2.0f, 2.5f,   -3.0f,  3.5f,   -4.0f, 4.5f, -5.0f, 5.5f};
  using Relay = std::function<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>(
      const std::vector<uint8_t> &, const std::vector<uint8_t> &, int64_t rows, int64_t groups, int bits)>;
  const std::vector<std::tuple<needle_rt::CqPanelLayout, std::vector<int>, Relay>> layouts = {
      {needle_rt::cq_panel_file, {2, 3, 4}, [](auto &p, auto &n, int64_t, int64_t, int) { return std::pair{p, n}; }},
      {needle_rt::cq_panel_x8,
       {4},
       [](auto &p, auto &n, int64_t rows, int64_t groups, int) {
         return std::pair{interleaveCqX8(p.data(), rows, groups), blockCqX8Norms(n.data(), rows, groups)};
       }},
      {needle_rt::cq_panel_lut16,
       {2, 4},
       [](auto &p, auto &n, int64_t rows, int64_t groups, int bits) {
         return std::pair{tileCqLut16(p.data(), rows, groups, bits), blockCqLut16Norms(n.data(), rows, groups)};
       }},
      {needle_rt::cq_panel_lut_dword,
       {2, 4},
       [](auto &p, auto &n, int64_t rows, int64_t groups, int bits) {
         return std::pair{tileCqLutDword(p.data(), rows, groups, bits), blockCqLut16Norms(n.data(), rows, groups)};
       }},
      {needle_rt::cq_panel_chunk_major,
       {2, 4},
       [](auto &p, auto &n, int64_t rows, int64_t groups, int bits) {
         return std::pair{tileCqLutChunkMajor(p.data(), rows, groups, bits), chunkMajorNorms(n.data(), rows, groups)};
       }},
      {needle_rt::cq_panel_tiled,
       {2, 3, 4},
       [](auto &p, auto &n, int64_t rows, int64_t groups, int bits) {
         return std::pair{tileRows(p.data(), rows, 16 * bits * groups, 1, 4), tileRows(n.data(), rows, groups, 2, 4)};
       }},
  };
  const int64_t groups = 5, cols = 128 * groups - 3, panelRows[] = {20, 4};
  for (const auto &[layout, widths, relay] : layouts)
    for (int bits : widths) {
      const RandomCq matrix(bits, 24, groups, static_cast<unsigned>(7 * layout + bits));
      std::vector<std::vector<uint8_t>> packed, norms;
      std::vector<int64_t> panels;
      for (int64_t first = 0, k = 0; k < 2; first += panelRows[k++]) {
        const auto [filePacked, fileNorms] = matrix.panel(first, panelRows[k]);
        auto [p, n] = relay(filePacked, fileNorms, panelRows[k], groups, bits);
        packed.push_back(std::move(p));
        norms.push_back(std::move(n));
        panels.insert(panels.end(), {panelRows[k], layout, layout == needle_rt::cq_panel_tiled ? 4 : 0});
      }
      const uint8_t *packedOf[] = {packed[0].data(), packed[1].data()};
      std::vector<std::vector<uint16_t>> normsOf;
      for (const std::vector<uint8_t> &bytes : norms) {
        normsOf.emplace_back(bytes.size() / 2);
        std::memcpy(normsOf.back().data(), bytes.data(), bytes.size());
      }
      const uint16_t *normsAt[] = {normsOf[0].data(), normsOf[1].data()};
      for (int64_t r = 0; r < matrix.rows; ++r) {
        std::vector<float> got(128 * groups, NAN);
        needle_rt::cq_row_panels(packedOf, normsAt, panels.data(), 2, codebook, bits, r, cols, got.data());
        for (int64_t c = 0; c < 128 * groups; ++c) {
          uint16_t half;
          std::memcpy(&half, &matrix.norms[static_cast<size_t>(2 * (r * groups + c / 128))], 2);
          const float want =
              codebook[matrix.indices[static_cast<size_t>(r * 128 * groups + c)]] * needle_rt::half_to_float(half);
          ASSERT_EQ(got[static_cast<size_t>(c)], want)
              << "layout " << layout << " bits " << bits << " row " << r << " column " << c;
        }
      }
    }
}

TEST(WeightLayouts, CqX8LayoutTakesCq4MatvecsOnly) {
  // A CQ4 matvec (1 row: 64 bytes at 0), a CQ4 batch (64 bytes at 64) and a CQ3 matvec (48 bytes
  // at 128): the first two change kernels and bytes, the CQ3 one neither. (The exact mode's CQ2
  // takes CqLut16: CqLut16LayoutTakesTheWidthsItIsGiven.)
  KernelProgram program = programOf(
      {cqCall("cq_matvec", 0, 192, 4, 1), cqCall("cq_matmul", 64, 194, 4, 1), cqCall("cq_matvec", 128, 196, 3, 1)},
      256);
  const std::vector<uint8_t> before = program.weights;
  useCqX8Layout(program, "cq_matmul_x8_exact");
  const std::vector<KernelCall> &calls = program.rungs[0].step[0].calls;
  EXPECT_EQ(calls[0].kernel, "cq_matmul_x8_exact"); // one token: a batch of one, stride 0
  ASSERT_EQ(calls[0].args.size(), 10u);
  EXPECT_EQ(calls[0].args[8].kind, KernelArg::Kind::I64);
  EXPECT_EQ(calls[0].args[8].value, 0);
  EXPECT_EQ(calls[0].args[9].kind, KernelArg::Kind::I64);
  EXPECT_EQ(calls[0].args[9].value, 1);
  EXPECT_EQ(calls[1].kernel, "cq_matmul_x8_exact");
  EXPECT_EQ(calls[1].args.size(), 8u); // a batch keeps its arguments
  EXPECT_EQ(calls[2].kernel, "cq_matvec");
  EXPECT_EQ(calls[2].args.size(), 8u);
  const std::vector<uint8_t> matvec = interleaveCqX8(before.data(), 1, 1);
  const std::vector<uint8_t> batch = interleaveCqX8(before.data() + 64, 1, 1);
  EXPECT_TRUE(std::equal(matvec.begin(), matvec.end(), program.weights.begin()));
  EXPECT_TRUE(std::equal(batch.begin(), batch.end(), program.weights.begin() + 64));
  EXPECT_TRUE(std::equal(before.begin() + 128, before.end(), program.weights.begin() + 128));
}

TEST(WeightLayouts, CqX8FourBitsByteOrderOfTheByteLookup) {
  // CQ4: column 64v + 32h + 8k + l is nibble h of byte 4k + l (l < 4) or 16 + 4k + l - 4 (l >= 4)
  // of 32-byte vector v. Column 13 = 8·1 + 5 (v 0, h 0, k 1, l 5) goes to byte 16 + 4 + 1 = 21,
  // low nibble; column 45 = 32 + 8·1 + 5 (h 1) to byte 21's high nibble; column 70 = 64 + 6
  // (v 1, k 0, l 6) to byte 32 + 16 + 2 = 50, low nibble; column 99 = 64 + 32 + 3 (v 1, h 1, k 0,
  // l 3) to byte 32 + 3 = 35, high nibble.
  std::vector<uint8_t> packed(64, 0);              // the file: 2 indices per byte, little-endian
  packed[13 / 2] = static_cast<uint8_t>(0x9 << 4); // column 13 = 9 (odd: high nibble)
  packed[45 / 2] = static_cast<uint8_t>(0xa << 4); // column 45 = 10
  packed[70 / 2] = 0x7;                            // column 70 = 7 (even: low nibble)
  packed[99 / 2] = static_cast<uint8_t>(0xf << 4); // column 99 = 15
  std::vector<uint8_t> want(64, 0);
  want[21] = 0xa9;
  want[50] = 0x07;
  want[35] = 0xf0;
  EXPECT_EQ(interleaveCqX8(packed.data(), 1, 1), want);
}

/// The file's packing of one row of `columns` indices at `bits`, index(c) for column c.
template <typename Index> std::vector<uint8_t> packRow(int bits, int64_t columns, Index index) {
  std::vector<uint8_t> packed(static_cast<size_t>(columns * bits / 8), 0); // little-endian within bytes
  for (int64_t i = 0; i < columns; ++i)
    packed[static_cast<size_t>(i * bits / 8)] |= static_cast<uint8_t>(index(i) << (i * bits % 8));
  return packed;
}

TEST(WeightLayouts, CqX8ReadsBackEveryColumnItWasGiven) {
  // Whatever the byte order, the runtime's CqX8 reader must hand back each column's own index.
  // Pattern p gives column c the index (c >> 4p) mod 16: together the patterns spell out all 7
  // bits of c, so every column of a group is told apart.
  for (int pattern = 0; pattern < 2; ++pattern) {
    auto index = [&](int64_t column) { return static_cast<unsigned>(column >> (4 * pattern)) & 15u; };
    const std::vector<uint8_t> group = interleaveCqX8(packRow(4, 128, index).data(), 1, 1);
    std::vector<int> seen(128, 0);
    needle_rt::CqX8Rows{}.for_each_index(group.data(), [&](int, int column, uint32_t got) {
      ++seen[column];
      EXPECT_EQ(got, index(column)) << "pattern " << pattern << " column " << column;
    });
    EXPECT_EQ(seen, std::vector<int>(128, 1)) << "each column once";
  }
}

/// The read-back tests' matrices: 19 rows (a padded second tile) of 5 groups (a block of 4 and one
/// of 1) at 2 and 4 bits, index (c >> bits·p + r) mod 2^bits for column c of row r under each
/// pattern p. check(bits, index, packed) for each, packed in the file's layout.
constexpr int64_t kReadBackRows = 19, kReadBackGroups = 5;
template <typename Check> void forEachReadBackMatrix(Check check) {
  for (int bits : {2, 4})
    for (int pattern = 0; bits * pattern < 7; ++pattern) {
      const unsigned mask = (1u << bits) - 1u;
      auto index = [&](int64_t r, int64_t column) {
        return static_cast<unsigned>((column >> (bits * pattern)) + r) & mask;
      };
      std::vector<uint8_t> packed;
      for (int64_t r = 0; r < kReadBackRows; ++r) {
        const std::vector<uint8_t> row = packRow(bits, 128 * kReadBackGroups, [&](int64_t c) { return index(r, c); });
        packed.insert(packed.end(), row.begin(), row.end());
      }
      check(bits, index, packed);
    }
}

TEST(WeightLayouts, CqLut16RowsReadsBackEveryColumnOfEveryRow) {
  // The runtime's row-by-row CqLut16 reader (the exact mode's portable CQ2) must decode each
  // row's own columns from the tiles, blocks and chunks tileCqLut16 wrote, with the codebook
  // c[k] = k.
  const int64_t rows = kReadBackRows, groups = kReadBackGroups;
  forEachReadBackMatrix([&](int bits, auto index, const std::vector<uint8_t> &packed) {
    const std::vector<uint8_t> tiled = tileCqLut16(packed.data(), rows, groups, bits);
    const float codebook[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const needle_rt::CqLut16Rows layout{bits};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        std::vector<float> decoded(128, -1.0f);
        layout.group_decode(layout.group(tiled.data(), rows, groups, r, g), codebook, decoded.data(), 1);
        for (int64_t i = 0; i < 128; ++i)
          ASSERT_EQ(decoded[static_cast<size_t>(i)], static_cast<float>(index(r, 128 * g + i)))
              << "bits " << bits << " row " << r << " column " << 128 * g + i;
      }
  });
}

TEST(WeightLayouts, CqLut16Cq2PairCodesByRowInTiles) {
  // CQ2, 17 rows of one group: 2 tiles of 16 rows (the second padded), each 512 bytes. Row 16,
  // column 5 = index 3: unit 2 (columns 4 and 5), second column, so code 3 << 2 = 12; unit 2 is
  // chunk 0's high nibble (4q + 2 + h with h = 0) at byte 16·0 + row 0 of tile 1. Row 2, column
  // 2 = index 1: unit 1, first column, code 1: chunk 0, h = 1, low nibble, byte 16 + 2 of tile 0.
  std::vector<uint8_t> packed(17 * 32, 0); // the file: 4 indices per byte, little-endian
  packed[16 * 32 + 5 / 4] = static_cast<uint8_t>(3 << (2 * (5 % 4)));
  packed[2 * 32 + 2 / 4] = static_cast<uint8_t>(1 << (2 * (2 % 4)));
  std::vector<uint8_t> want(2 * 16 * 32, 0);
  want[512 + 0] = 12 << 4;
  want[16 + 2] = 1;
  EXPECT_EQ(tileCqLut16(packed.data(), 17, 1, 2), want);
}

TEST(WeightLayouts, CqLutDwordHoldsEachRowsUnitsInItsOwnLane) {
  // CQ2, 17 rows of one group: 2 tiles (the second padded) of 8 chunks of 64 bytes. Row 16,
  // column 5 = index 3: unit 2's second column, code 3 << 2 = 12, in chunk 0, byte 4·0 + 2 of
  // tile 1, low nibble. Row 2, column 2 = index 1: unit 1, code 1, byte 4·2 + 1, low. Row 3,
  // column 13 = index 2: unit 6's second column, code 8, in byte 4·3 + 2's high nibble. Row 0,
  // column 16 = index 1: unit 8, code 1, the low nibble of chunk 1's byte 0.
  std::vector<uint8_t> packed(17 * 32, 0); // the file: 4 indices per byte, little-endian
  packed[16 * 32 + 5 / 4] = static_cast<uint8_t>(3 << (2 * (5 % 4)));
  packed[2 * 32 + 2 / 4] = static_cast<uint8_t>(1 << (2 * (2 % 4)));
  packed[3 * 32 + 13 / 4] = static_cast<uint8_t>(2 << (2 * (13 % 4)));
  packed[0 * 32 + 16 / 4] = 1;
  std::vector<uint8_t> want(2 * 16 * 32, 0);
  want[512 + 2] = 12;
  want[9] = 1;
  want[14] = 8 << 4;
  want[64] = 1;
  EXPECT_EQ(tileCqLutDword(packed.data(), 17, 1, 2), want);
  // CQ4, 6 rows of one group: one tile of 16 chunks. Row 5, column 15 = index 9: unit 15 = 8·1 + 4
  // + 3, the high nibble of chunk 1's byte 4·5 + 3. Row 5, column 0 = index 6: chunk 0's byte 20.
  std::vector<uint8_t> cq4(6 * 64, 0); // 2 indices per byte, little-endian
  cq4[5 * 64 + 15 / 2] = 9 << 4;
  cq4[5 * 64 + 0] = 6;
  std::vector<uint8_t> want4(16 * 64, 0);
  want4[64 + 4 * 5 + 3] = 9 << 4;
  want4[4 * 5] = 6;
  EXPECT_EQ(tileCqLutDword(cq4.data(), 6, 1, 4), want4);
}

/// Every read-back matrix in a layout (`lay`), each unit's code read where code(laid, bits, tiles,
/// r, g, u) says it is, against the file's.
template <typename Lay, typename Code> void expectEveryCodeReadBack(Lay lay, Code code) {
  const int64_t rows = kReadBackRows, groups = kReadBackGroups, tiles = needle_rt::CqLut16::tiles(rows);
  forEachReadBackMatrix([&](int bits, auto index, const std::vector<uint8_t> &packed) {
    const std::vector<uint8_t> laid = lay(packed.data(), rows, groups, bits);
    const int64_t perUnit = 4 / bits;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t u = 0; u < 32 * bits; ++u) {
          unsigned want = 0;
          for (int64_t j = 0; j < perUnit; ++j)
            want |= index(r, 128 * g + perUnit * u + j) << (bits * j);
          ASSERT_EQ(code(laid, bits, tiles, r, g, u), want)
              << "bits " << bits << " row " << r << " group " << g << " unit " << u;
        }
  });
}

TEST(WeightLayouts, CqLutDwordReadsBackEveryColumnOfEveryRow) {
  // Every unit's code where needle_rt::CqLutDword says it is (the VNNI kernel's reading).
  expectEveryCodeReadBack(
      tileCqLutDword, [](const std::vector<uint8_t> &laid, int bits, int64_t tiles, int64_t r, int64_t g, int64_t u) {
        const uint8_t *tileGroup = laid.data() + needle_rt::CqLut16::tile_group_bytes(bits) *
                                                     needle_rt::CqLut16::offset(tiles, kReadBackGroups, r / 16, g);
        return needle_rt::cqlut_code<needle_rt::CqLutDword>(tileGroup, r % 16, u);
      });
}

TEST(WeightLayouts, CqLutChunkMajorLaysChunksGroupByGroupTileAfterTile) {
  // CQ2, 17 rows (2 tiles, the second padded) of 2 groups: 2 · 8 · 2 chunks of 64 bytes. Row 16,
  // column 144 = group 1's index 16: unit 8, code 1, in chunk 1 (CqLutDword's byte 64 + 0, low
  // nibble) of tile 1's group 1, which lies ((1·8 + 1)·2 + 1)·64 = 1216 bytes in. Row 2, column 2
  // = index 1: unit 1, code 1, tile 0's group 0's chunk 0, byte 4·2 + 1 = 9. Row 16's norm of
  // group 1 lies 16·(1·2 + 1) + 0 = 48 halves in; row 1's of group 0 1 half in.
  std::vector<uint8_t> packed(17 * 64, 0); // the file: 4 indices per byte, little-endian
  packed[16 * 64 + 144 / 4] = 1;
  packed[2 * 64 + 2 / 4] = static_cast<uint8_t>(1 << (2 * (2 % 4)));
  std::vector<uint8_t> want(2 * 2 * 8 * 64, 0);
  want[1216] = 1;
  want[9] = 1;
  EXPECT_EQ(tileCqLutChunkMajor(packed.data(), 17, 2, 2), want);
  std::vector<uint8_t> norms(17 * 2 * 2, 0); // [rows][groups] fp16
  norms[2 * (16 * 2 + 1)] = 0xAB;
  norms[2 * (1 * 2 + 0) + 1] = 0xCD;
  std::vector<uint8_t> wantNorms(2 * 16 * 2 * 2, 0);
  wantNorms[2 * 48] = 0xAB;
  wantNorms[2 * 1 + 1] = 0xCD;
  EXPECT_EQ(chunkMajorNorms(norms.data(), 17, 2), wantNorms);
}

TEST(WeightLayouts, CqLutChunkMajorLaysSlabAfterSlab) {
  // CQ2, 1040 rows (65 tiles: a slab of 64 and one of 1) of 2 groups. Row 1039 (tile 64, the
  // second slab's only tile, row 15 of it), column 146 = group 1's index 18: unit 9, code 1, in
  // chunk 1 (CqLutDword's byte 64 + 4·15 + 1, low nibble) of tile 64's group 1. The first slab
  // takes 64 · 2 · 8 chunks, 65536 bytes; in the second, group 1's chunk 1 is chunk 1·8 + 1 = 9:
  // 65536 + 9·64 + 61 = 66173. Row 1008 (tile 63, row 0), column 128 = group 1's index 0: unit 0,
  // tile 63's group 1's chunk 0, chunk (1·8 + 0)·64 + 63 of the first slab (64 tiles, not 65):
  // byte 575·64 = 36800. Row 1039's norm of group 1 lies 16·(64·2 + 1) + 15 = 2079 halves in;
  // row 1008's of group 1 16·(1·64 + 63) = 2032 halves in.
  const int64_t rows = 1040, groups = 2;
  std::vector<uint8_t> packed(rows * 64, 0); // the file: 4 indices per byte, little-endian
  packed[1039 * 64 + 146 / 4] = static_cast<uint8_t>(1 << (2 * (146 % 4)));
  packed[1008 * 64 + 128 / 4] = 1;
  std::vector<uint8_t> want(65 * groups * 8 * 64, 0);
  want[66173] = 1;
  want[36800] = 1;
  EXPECT_EQ(tileCqLutChunkMajor(packed.data(), rows, groups, 2), want);
  std::vector<uint8_t> norms(rows * groups * 2, 0); // [rows][groups] fp16
  norms[2 * (1039 * 2 + 1)] = 0xAB;
  norms[2 * (1008 * 2 + 1) + 1] = 0xCD;
  std::vector<uint8_t> wantNorms(65 * 16 * groups * 2, 0);
  wantNorms[2 * 2079] = 0xAB;
  wantNorms[2 * 2032 + 1] = 0xCD;
  EXPECT_EQ(chunkMajorNorms(norms.data(), rows, groups), wantNorms);
}

TEST(WeightLayouts, CqLutChunkMajorReadsBackEveryColumnOfEveryRow) {
  // Every unit's code where needle_rt::CqLutChunkMajor and CqLutDword say it is (the exact CQ2
  // kernel's reading on AVX-512).
  expectEveryCodeReadBack(tileCqLutChunkMajor, [](const std::vector<uint8_t> &laid, int bits, int64_t tiles, int64_t r,
                                                  int64_t g, int64_t u) {
    const int64_t at = needle_rt::CqLutChunkMajor::chunk(tiles, kReadBackGroups, r / 16, g, u / 8, bits) +
                       needle_rt::CqLutDword::byte(r % 16, u) % 64;
    return (laid[static_cast<size_t>(at)] >> needle_rt::CqLutDword::shift(u)) & 15u;
  });
}

TEST(WeightLayouts, CqLut16Cq4OneColumnPerUnitGroupsInBlocks) {
  // CQ4, 2 rows of 6 groups: blocks of 4 and 2 groups, one tile (1024 bytes per tile's group).
  // Row 1, group 5, column 7 = index 9: unit 7 = 4·1 + 2 + 1, so chunk 1, h = 1, high nibble,
  // byte 32 + 16 + 1; group 5 is the second of the short block, which starts after 4 groups.
  std::vector<uint8_t> packed(2 * 6 * 64, 0);
  packed[(1 * 6 + 5) * 64 + 7 / 2] = 9 << 4;
  std::vector<uint8_t> want(6 * 16 * 64, 0);
  want[(4 + 1) * 1024 + 32 + 16 + 1] = 9 << 4;
  EXPECT_EQ(tileCqLut16(packed.data(), 2, 6, 4), want);
}

TEST(WeightLayouts, CqLut16NormsSixteenPerTileGroupPaddedWithZeros) {
  // 17 rows of 2 groups: tile 0 holds group 0's 16 norms, then group 1's; tile 1 the same with
  // row 16's norms first and 15 zero norms after each.
  std::vector<uint8_t> norms(17 * 2 * 2);
  for (size_t i = 0; i < norms.size(); i += 2)
    norms[i] = static_cast<uint8_t>(i / 2 + 1), norms[i + 1] = 0x3c; // norm (r, g) is 2r + g + 1
  const std::vector<uint8_t> got = blockCqLut16Norms(norms.data(), 17, 2);
  ASSERT_EQ(got.size(), 2u * 2 * 16 * 2);
  EXPECT_EQ(got[2 * 3], 2 * 3 + 0 + 1);                    // tile 0, group 0, row 3
  EXPECT_EQ(got[2 * (16 + 3)], 2 * 3 + 1 + 1);             // tile 0, group 1, row 3
  EXPECT_EQ(got[2 * (32 + 0)], 2 * 16 + 0 + 1);            // tile 1, group 0, row 16
  EXPECT_EQ(got[2 * (48 + 0)], 2 * 16 + 1 + 1);            // tile 1, group 1, row 16
  EXPECT_EQ(got[2 * (32 + 1)] | got[2 * (32 + 1) + 1], 0); // a padding row
}

TEST(WeightLayouts, CqLut16LayoutAppendsWhatGrows) {
  // A CQ2 matvec of 16 rows (one whole tile) is re-laid in place; a CQ4 batch of 17 rows needs
  // 2 tiles, more room than the file's, so it reads a copy appended to the weights.
  KernelProgram program = programOf({cqCall("cq_matvec", 0, 2048, 2, 16), cqCall("cq_matmul", 512, 2080, 4, 17)}, 2200);
  const std::vector<uint8_t> before = program.weights;
  useCqLut16Layout(program, {2, 4}, "cq_matmul_lut16_fast");
  const std::vector<KernelCall> &calls = program.rungs[0].step[0].calls;
  EXPECT_EQ(calls[0].kernel, "cq_matmul_lut16_fast");
  ASSERT_EQ(calls[0].args.size(), 10u); // one token: stride 0, n 1
  EXPECT_EQ(calls[0].args[8].value, 0);
  EXPECT_EQ(calls[0].args[9].value, 1);
  EXPECT_EQ(calls[1].kernel, "cq_matmul_lut16_fast");
  EXPECT_EQ(calls[0].args[0].value, 0);
  const std::vector<uint8_t> cq2 = tileCqLut16(before.data(), 16, 1, 2);
  EXPECT_TRUE(std::equal(cq2.begin(), cq2.end(), program.weights.begin()));
  EXPECT_EQ(calls[0].args[1].value, 2048); // the CQ2 norms, 16 rows: re-laid in place too
  const std::vector<uint8_t> cq2Norms = blockCqLut16Norms(before.data() + 2048, 16, 1);
  EXPECT_TRUE(std::equal(cq2Norms.begin(), cq2Norms.end(), program.weights.begin() + 2048));
  const std::vector<uint8_t> cq4 = tileCqLut16(before.data() + 512, 17, 1, 4);
  ASSERT_GE(calls[1].args[0].value, 2200);
  EXPECT_TRUE(std::equal(cq4.begin(), cq4.end(), program.weights.begin() + calls[1].args[0].value));
  const std::vector<uint8_t> norms = blockCqLut16Norms(before.data() + 2080, 17, 1);
  ASSERT_GE(calls[1].args[1].value, 2200);
  EXPECT_TRUE(std::equal(norms.begin(), norms.end(), program.weights.begin() + calls[1].args[1].value));
}

TEST(WeightLayouts, CqLut16LayoutTakesTheWidthsItIsGiven) {
  // The exact mode lays CQ2 as CqLut16 and CQ4 as CqX8: given {2}, a CQ2 matvec changes kernel
  // and bytes, a CQ4 one neither.
  KernelProgram program = programOf({cqCall("cq_matvec", 0, 1536, 2, 16), cqCall("cq_matvec", 512, 1568, 4, 16)}, 1600);
  const std::vector<uint8_t> before = program.weights;
  useCqLut16Layout(program, {2}, "cq_matmul_lut16_exact");
  const std::vector<KernelCall> &calls = program.rungs[0].step[0].calls;
  EXPECT_EQ(calls[0].kernel, "cq_matmul_lut16_exact");
  EXPECT_EQ(calls[0].args.size(), 10u);
  EXPECT_EQ(calls[1].kernel, "cq_matvec");
  EXPECT_EQ(calls[1].args.size(), 8u);
  const std::vector<uint8_t> cq2 = tileCqLut16(before.data(), 16, 1, 2);
  EXPECT_TRUE(std::equal(cq2.begin(), cq2.end(), program.weights.begin()));
  EXPECT_TRUE(std::equal(before.begin() + 512, before.end(), program.weights.begin() + 512));
}

TEST(WeightLayouts, FastModeLeavesNarrowCq4ToTheExactLayoutsThatFollow) {
  // The object's chain on an AVX-512 VNNI CPU: the fast layout first, then the exact ones. A
  // 64-row CQ4 matrix goes fast (CqLutDword), a 16-row one exact (CqLutDword) in whole tiles, a 4-row one
  // to CqX8, and a CQ2 one fast; each is re-laid once. The 64-row matrix is one that cq_row also
  // reads (the tied embedding): the fast kernel reads a copy, and its file bytes stay.
  KernelCall gather{"cq_row",
                    {KernelArg::weight(0, "uint8_t"), KernelArg::weight(4096, "uint16_t"),
                     KernelArg::of(KernelArg::Kind::Codebook, 4), KernelArg::i32(4), KernelArg::i64(0),
                     KernelArg::i64(128), KernelArg::arena(0)},
                    ""};
  KernelProgram program =
      programOf({gather, cqCall("cq_matvec", 0, 4096, 4, 64), cqCall("cq_matmul", 4224, 5248, 4, 16),
                 cqCall("cq_matvec", 5280, 5536, 4, 4), cqCall("cq_matvec", 5544, 6056, 2, 16)},
                6144);
  const std::vector<uint8_t> before = program.weights;
  useFastCqLayout(program, useCqLutDwordLayout, "cq_matmul_dword_fast_avx512vnni");
  useCqLutChunkMajorLayout(program, "cq_matmul_chunkmajor_exact_avx512");
  useCqLutDwordLayout(program, {4}, "cq_matmul_dword_exact_avx512", kWholeCqLutTiles);
  useCqX8Layout(program, "cq_matmul_x8_exact_avx512");
  const std::vector<KernelCall> &calls = program.rungs[0].step[0].calls;
  EXPECT_EQ(calls[0].kernel, "cq_row");
  EXPECT_EQ(calls[1].kernel, "cq_matmul_dword_fast_avx512vnni");
  EXPECT_EQ(calls[2].kernel, "cq_matmul_dword_exact_avx512");
  EXPECT_EQ(calls[3].kernel, "cq_matmul_x8_exact_avx512");
  EXPECT_EQ(calls[4].kernel, "cq_matmul_dword_fast_avx512vnni");
  EXPECT_TRUE(std::equal(before.begin(), before.begin() + 4096, program.weights.begin())) << "cq_row's bytes";
  ASSERT_GE(calls[1].args[0].value, 6144);
  const std::vector<uint8_t> wide = tileCqLutDword(before.data(), 64, 1, 4);
  EXPECT_TRUE(std::equal(wide.begin(), wide.end(), program.weights.begin() + calls[1].args[0].value));
  const std::vector<uint8_t> tile = tileCqLutDword(before.data() + 4224, 16, 1, 4);
  EXPECT_TRUE(std::equal(tile.begin(), tile.end(), program.weights.begin() + calls[2].args[0].value));
  const std::vector<uint8_t> x8 = interleaveCqX8(before.data() + 5280, 4, 1);
  EXPECT_TRUE(std::equal(x8.begin(), x8.end(), program.weights.begin() + calls[3].args[0].value));
  const std::vector<uint8_t> cq2 = tileCqLutDword(before.data() + 5544, 16, 1, 2);
  EXPECT_TRUE(std::equal(cq2.begin(), cq2.end(), program.weights.begin() + calls[4].args[0].value));
}

TEST(WeightLayouts, ExactModeOnAvx512TakesCq2ChunkMajorAndCq4InDwords) {
  // The object's exact chain on an AVX-512 CPU: a CQ2 matrix (33 rows: 3 tiles) to CqLutChunkMajor,
  // its norms too, a CQ4 one of a whole tile to CqLutDword; each points at its kernel.
  KernelProgram program =
      programOf({cqCall("cq_matvec", 0, 2112, 2, 33), cqCall("cq_matvec", 2304, 3328, 4, 16)}, 3392);
  const std::vector<uint8_t> before = program.weights;
  useCqLutChunkMajorLayout(program, "cq_matmul_chunkmajor_exact_avx512");
  useCqLutDwordLayout(program, {4}, "cq_matmul_dword_exact_avx512", kWholeCqLutTiles);
  const std::vector<KernelCall> &calls = program.rungs[0].step[0].calls;
  EXPECT_EQ(calls[0].kernel, "cq_matmul_chunkmajor_exact_avx512");
  EXPECT_EQ(calls[1].kernel, "cq_matmul_dword_exact_avx512");
  const std::vector<uint8_t> cq2 = tileCqLutChunkMajor(before.data(), 33, 1, 2);
  EXPECT_TRUE(std::equal(cq2.begin(), cq2.end(), program.weights.begin() + calls[0].args[0].value));
  const std::vector<uint8_t> norms = chunkMajorNorms(before.data() + 2112, 33, 1);
  EXPECT_TRUE(std::equal(norms.begin(), norms.end(), program.weights.begin() + calls[0].args[1].value));
  const std::vector<uint8_t> cq4 = tileCqLutDword(before.data() + 2304, 16, 1, 4);
  EXPECT_TRUE(std::equal(cq4.begin(), cq4.end(), program.weights.begin() + calls[1].args[0].value));
}

TEST(WeightLayouts, CqLutLayoutsTakeTheRowsTheyAreGiven) {
  // The fast mode's CQ4 (kFastCq4Rows): a matrix of 64 rows takes the layout, one of 63 keeps its
  // kernel and bytes for the exact mode's; whole tiles (kWholeCqLutTiles): 32 rows yes, 17 no.
  KernelProgram program =
      programOf({cqCall("cq_matvec", 0, 8192, 4, 64), cqCall("cq_matvec", 4096, 8320, 4, 63)}, 8448);
  const std::vector<uint8_t> before = program.weights;
  useCqLutDwordLayout(program, {4}, "cq_matmul_dword_fast_avx512vnni", kFastCq4Rows);
  const std::vector<KernelCall> &calls = program.rungs[0].step[0].calls;
  EXPECT_EQ(calls[0].kernel, "cq_matmul_dword_fast_avx512vnni");
  const std::vector<uint8_t> wide = tileCqLutDword(before.data(), 64, 1, 4);
  EXPECT_TRUE(std::equal(wide.begin(), wide.end(), program.weights.begin()));
  EXPECT_EQ(calls[1].kernel, "cq_matvec");
  EXPECT_TRUE(std::equal(before.begin() + 4096, before.begin() + 8192, program.weights.begin() + 4096));

  KernelProgram tiles = programOf({cqCall("cq_matvec", 0, 2048, 4, 32), cqCall("cq_matvec", 2112, 3200, 4, 17)}, 3264);
  useCqLutDwordLayout(tiles, {4}, "cq_matmul_dword_exact_avx512", kWholeCqLutTiles);
  EXPECT_EQ(tiles.rungs[0].step[0].calls[0].kernel, "cq_matmul_dword_exact_avx512");
  EXPECT_EQ(tiles.rungs[0].step[0].calls[1].kernel, "cq_matvec");
}

} // namespace
} // namespace needle
