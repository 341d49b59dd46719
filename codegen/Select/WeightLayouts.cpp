#include "codegen/Select/WeightLayouts.h"

#include "Support/RoundUp.h"
#include "codegen/Select/KernelRegistry.h"
#include "runtime/needle_contract.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace needle {

namespace {

// The layouts' sizes and block order are the runtime's own (runtime/needle_contract.h), so the
// re-laying and the kernels that read it cannot disagree.
constexpr int64_t kGroup = needle_rt::cq_group;
constexpr int64_t kLutTile = needle_rt::CqLut16::tile;
static_assert(needle_rt::CqX8::block == needle_rt::CqLut16::block, "one block order for both layouts");
static_assert(kWholeCqLutTiles.multiple == kLutTile, "whole tiles are CqLut16's");

/// Where item i's group g goes, counted in groups: rows in CqX8, tiles of rows in CqLut16.
int64_t blockOffset(int64_t items, int64_t groups, int64_t i, int64_t g) {
  return needle_rt::cq_block_offset(items, groups, i, g, needle_rt::CqX8::block);
}

/// Index i of a group packed little-endian within bytes at `bits` (2 or 4), as the file has it.
unsigned fileIndex(const uint8_t *group, int bits, int64_t i) {
  const int64_t perByte = 8 / bits;
  return (group[i / perByte] >> (bits * (i % perByte))) & ((1u << bits) - 1u);
}

int64_t cqGroups(const KernelCall &call) { return roundUp(argValue(call, "cols"), kGroup) / kGroup; }

} // namespace

std::vector<uint8_t> tileRows(const uint8_t *rowMajor, int64_t rows, int64_t rowElements, int64_t elementBytes,
                              int64_t tile) {
  std::vector<uint8_t> tiled(static_cast<size_t>(rows * rowElements * elementBytes));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < rowElements; ++j)
      std::memcpy(&tiled[static_cast<size_t>((((r / tile) * rowElements + j) * tile + r % tile) * elementBytes)],
                  rowMajor + (r * rowElements + j) * elementBytes, static_cast<size_t>(elementBytes));
  return tiled;
}

namespace {

/// Where CqX8 keeps CQ4 column i = 8m + l of a group (m = 8v + 4h + k: nibble h of byte
/// cq4_byte(k, l) of vector v): the byte, and the shift within it.
std::pair<int64_t, int> cqx8Place(int64_t i) {
  const int64_t m = i / 8, l = i % 8;
  return {32 * (m / 8) + needle_rt::CqX8::cq4_byte(m % 4, l), static_cast<int>(4 * (m / 4 % 2))};
}

} // namespace

std::vector<uint8_t> interleaveCqX8(const uint8_t *packed, int64_t rows, int64_t groups) {
  constexpr int bits = 4;
  constexpr int64_t groupBytes = needle_rt::CqX8::group_bytes;
  std::vector<uint8_t> out(static_cast<size_t>(rows * groups * groupBytes), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t *in = packed + (r * groups + g) * groupBytes;
      uint8_t *group = &out[static_cast<size_t>(groupBytes * blockOffset(rows, groups, r, g))];
      for (int64_t i = 0; i < kGroup; ++i) {
        const auto [byte, shift] = cqx8Place(i);
        group[byte] |= static_cast<uint8_t>(fileIndex(in, bits, i) << shift);
      }
    }
  return out;
}

std::vector<uint8_t> blockCqX8Norms(const uint8_t *norms, int64_t rows, int64_t groups) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * groups * 2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      std::memcpy(&out[static_cast<size_t>(2 * blockOffset(rows, groups, r, g))], norms + 2 * (r * groups + g), 2);
  return out;
}

namespace {

/// A CQ2 or CQ4 matrix in CqLut16's tiles, blocks and units, each unit's code where `Layout`
/// (needle_rt::CqLut16 or CqLutDword) puts it in its tile's group.
template <typename Layout>
std::vector<uint8_t> tileCqLut(const uint8_t *packed, int64_t rows, int64_t groups, int bits) {
  const int64_t groupBytes = 16 * bits, tiles = needle_rt::CqLut16::tiles(rows), unitColumns = 4 / bits;
  std::vector<uint8_t> out(static_cast<size_t>(tiles * kLutTile * groups * groupBytes), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t *in = packed + (r * groups + g) * groupBytes;
      uint8_t *tileGroup =
          &out[static_cast<size_t>(kLutTile * groupBytes * blockOffset(tiles, groups, r / kLutTile, g))];
      for (int64_t u = 0; u < 32 * bits; ++u) {
        unsigned code = 0;
        for (int64_t j = 0; j < unitColumns; ++j)
          code |= fileIndex(in, bits, u * unitColumns + j) << (bits * j);
        tileGroup[Layout::byte(r % kLutTile, u)] |= static_cast<uint8_t>(code << Layout::shift(u));
      }
    }
  return out;
}

} // namespace

std::vector<uint8_t> tileCqLut16(const uint8_t *packed, int64_t rows, int64_t groups, int bits) {
  return tileCqLut<needle_rt::CqLut16>(packed, rows, groups, bits);
}

std::vector<uint8_t> tileCqLutDword(const uint8_t *packed, int64_t rows, int64_t groups, int bits) {
  return tileCqLut<needle_rt::CqLutDword>(packed, rows, groups, bits);
}

namespace {

/// The norms [rows][groups] (fp16) of a tiled layout: row r's of group g at halves
/// tileGroup(tiles, groups, r / 16, g) + r % 16 (zeros for the last tile's padding rows).
template <typename TileGroup>
std::vector<uint8_t> tileNorms(const uint8_t *norms, int64_t rows, int64_t groups, TileGroup tileGroup) {
  const int64_t tiles = needle_rt::CqLut16::tiles(rows);
  std::vector<uint8_t> out(static_cast<size_t>(tiles * kLutTile * groups * 2), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      std::memcpy(&out[static_cast<size_t>(2 * (tileGroup(tiles, groups, r / kLutTile, g) + r % kLutTile))],
                  norms + 2 * (r * groups + g), 2);
  return out;
}

} // namespace

std::vector<uint8_t> blockCqLut16Norms(const uint8_t *norms, int64_t rows, int64_t groups) {
  return tileNorms(norms, rows, groups, [](int64_t tiles, int64_t groups, int64_t t, int64_t g) {
    return kLutTile * blockOffset(tiles, groups, t, g);
  });
}

std::vector<uint8_t> tileCqLutChunkMajor(const uint8_t *packed, int64_t rows, int64_t groups, int bits) {
  const std::vector<uint8_t> dword = tileCqLutDword(packed, rows, groups, bits);
  const int64_t tiles = needle_rt::CqLut16::tiles(rows), tileGroupBytes = needle_rt::CqLut16::tile_group_bytes(bits);
  std::vector<uint8_t> out(dword.size());
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t m = 0; m < 4 * bits; ++m)
        std::memcpy(&out[static_cast<size_t>(needle_rt::CqLutChunkMajor::chunk(tiles, groups, t, g, m, bits))],
                    &dword[static_cast<size_t>(tileGroupBytes * blockOffset(tiles, groups, t, g) + 64 * m)], 64);
  return out;
}

std::vector<uint8_t> chunkMajorNorms(const uint8_t *norms, int64_t rows, int64_t groups) {
  return tileNorms(norms, rows, groups, needle_rt::CqLutChunkMajor::norms);
}

bool isCqMatvec(const KernelCall &call) { return call.kernel == "cq_matvec" || call.kernel == "cq_matmul"; }

namespace {

/// Points panel k of a cq_row_panels gather at its relaid bytes and their layout, for each panel
/// `relaid` re-laid (by the file layout's offset).
void repointGather(KernelCall &gather, const std::map<int64_t, int64_t> &relaidOffset,
                   const std::map<int64_t, PanelLayout> &relaid) {
  KernelArg &packed = argument(gather, "packed"), &norms = argument(gather, "norms");
  std::vector<int64_t> &panels = argument(gather, "panels").ints;
  for (size_t k = 0; k < packed.pointers.size(); ++k) {
    const auto it = relaid.find(packed.pointers[k].value);
    if (it == relaid.end())
      continue;
    packed.pointers[k].value = relaidOffset.at(packed.pointers[k].value);
    norms.pointers[k].value = relaidOffset.at(norms.pointers[k].value);
    panels[needle_rt::cq_panel_fields * k + 1] = it->second.layout;
    panels[needle_rt::cq_panel_fields * k + 2] = it->second.tile;
  }
}

} // namespace

void relayCqWeights(KernelProgram &program, const std::function<bool(const KernelCall &)> &chosen,
                    const CqRelayout &relayout) {
  std::set<int64_t> readElsewhere;
  forEachCall(program, [&](const KernelCall &call) { // a gather's panels are in pointer lists: repointGather
    const bool relaid = isCqMatvec(call) && chosen(call);
    for (size_t i = relaid ? 2 : 0; i < call.args.size(); ++i)
      if (call.args[i].kind == KernelArg::Kind::Weight)
        readElsewhere.insert(call.args[i].value);
  });
  std::vector<uint8_t> &blob = program.weights;
  std::map<int64_t, int64_t> relaidOffset; // by the file layout's offset
  std::map<int64_t, PanelLayout> relaid;   // each re-laid matrix's layout, by its packed offset in the file layout
  // In place when nothing else reads the file's bytes and the new ones take the same room (a
  // layout that pads, CqLut16's last tile, takes more).
  auto place = [&](int64_t offset, const std::vector<uint8_t> &bytes, int64_t fileBytes) {
    auto [it, inserted] = relaidOffset.try_emplace(offset, offset);
    if (!inserted)
      return it->second;
    if (readElsewhere.count(offset) || static_cast<int64_t>(bytes.size()) != fileBytes) {
      it->second = appendWeights(blob, bytes.data(), bytes.size());
    } else {
      std::copy(bytes.begin(), bytes.end(), blob.begin() + offset);
    }
    return it->second;
  };
  auto relay = [&](KernelArg &arg, const KernelCall &call, const auto &layout, int64_t fileBytes) {
    if (relaidOffset.count(arg.value))
      arg.value = relaidOffset.at(arg.value);
    else
      arg.value = place(arg.value, layout(call, &blob[static_cast<size_t>(arg.value)]), fileBytes);
  };
  forEachCall(program, [&](KernelCall &call) {
    if (!isCqMatvec(call) || !chosen(call))
      return;
    const int64_t groupsOfRows = argValue(call, "rows") * cqGroups(call);
    relaid.try_emplace(argValue(call, "packed"), relayout.panel(call));
    relay(argument(call, "packed"), call, relayout.packed, groupsOfRows * 16 * argValue(call, "bits"));
    relay(argument(call, "norms"), call, relayout.norms, groupsOfRows * 2);
  });
  forEachCall(program, [&](KernelCall &call) {
    if (call.kernel == kGatherFromPanels)
      repointGather(call, relaidOffset, relaid);
  });
}

namespace {

using PackedLayout = std::vector<uint8_t> (*)(const uint8_t *packed, int64_t rows, int64_t groups, int bits);
using NormsLayout = std::vector<uint8_t> (*)(const uint8_t *norms, int64_t rows, int64_t groups);

/// Re-lays the packed indices of every CQ matvec at one of the widths `bits` by `packed` and its
/// norms by `norms`, and points the calls at `matmul`: a batch's (cq_matmul) as it is, one
/// token's (cq_matvec) as a batch of one (stride 0, n 1), so each layout needs one kernel entry
/// point per target.
void useCqLayout(KernelProgram &program, const std::vector<int> &bits, PackedLayout packed, NormsLayout norms,
                 needle_rt::CqPanelLayout panel, const std::string &matmul, CqRows rows = {}) {
  auto fits = [bits, rows](const KernelCall &call) {
    return std::find(bits.begin(), bits.end(), argValue(call, "bits")) != bits.end() &&
           argValue(call, "rows") % rows.multiple == 0 && argValue(call, "rows") >= rows.atLeast;
  };
  CqRelayout layout;
  layout.packed = [packed](const KernelCall &call, const uint8_t *bytes) {
    return packed(bytes, argValue(call, "rows"), cqGroups(call), static_cast<int>(argValue(call, "bits")));
  };
  layout.norms = [norms](const KernelCall &call, const uint8_t *bytes) {
    return norms(bytes, argValue(call, "rows"), cqGroups(call));
  };
  layout.panel = [panel](const KernelCall &) { return PanelLayout{panel}; };
  relayCqWeights(program, fits, layout);
  forEachCall(program, [&](KernelCall &call) {
    if (!isCqMatvec(call) || !fits(call))
      return;
    if (call.kernel == "cq_matvec") {
      call.args.push_back(KernelArg::i64(0));
      call.args.push_back(KernelArg::i64(1));
    }
    call.kernel = matmul;
  });
}

} // namespace

void useCqX8Layout(KernelProgram &program, const std::string &matmul) {
  auto cq4 = [](const uint8_t *packed, int64_t rows, int64_t groups, int) {
    return interleaveCqX8(packed, rows, groups);
  };
  useCqLayout(program, {4}, cq4, blockCqX8Norms, needle_rt::cq_panel_x8, matmul);
}

void useCqLut16Layout(KernelProgram &program, const std::vector<int> &bits, const std::string &matmul, CqRows rows) {
  useCqLayout(program, bits, tileCqLut16, blockCqLut16Norms, needle_rt::cq_panel_lut16, matmul, rows);
}

void useCqLutDwordLayout(KernelProgram &program, const std::vector<int> &bits, const std::string &matmul, CqRows rows) {
  useCqLayout(program, bits, tileCqLutDword, blockCqLut16Norms, needle_rt::cq_panel_lut_dword, matmul, rows);
}

void useCqLutChunkMajorLayout(KernelProgram &program, const std::string &matmul) {
  useCqLayout(program, {2}, tileCqLutChunkMajor, chunkMajorNorms, needle_rt::cq_panel_chunk_major, matmul);
}

void useFastCqLayout(KernelProgram &program, CqLutLayoutUse use, const std::string &matmul) {
  use(program, {2}, matmul, {});
  use(program, {4}, matmul, kFastCq4Rows);
}

} // namespace needle
