#include "codegen/Lower/WeightLayouts.h"

#include "Support/RoundUp.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace needle {

namespace {

constexpr int64_t kGroup = 128;   // the CQ group size (spec/cq.md)
constexpr int64_t kCqX8Block = 4; // groups per block of the CqX8 layout (needle_rt::CqX8)

/// Where row r's group g goes in the CqX8 layout, counted in groups: blocks of kCqX8Block
/// groups, each holding every row's groups in it, row after row.
int64_t cqX8Offset(int64_t rows, int64_t groups, int64_t r, int64_t g) {
  const int64_t first = g - g % kCqX8Block;
  return first * rows + r * std::min(kCqX8Block, groups - first) + g % kCqX8Block;
}

int64_t cqGroups(const KernelCall &call) { return roundUp(call.args[5].value, kGroup) / kGroup; }

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

std::vector<uint8_t> interleaveCqX8(const uint8_t *packed, int64_t rows, int64_t groups, int bits) {
  const int64_t groupBytes = 16 * bits, span = 256 / bits, perByte = 8 / bits;
  std::vector<uint8_t> out(static_cast<size_t>(rows * groups * groupBytes), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t *in = packed + (r * groups + g) * groupBytes;
      uint8_t *group = &out[static_cast<size_t>(groupBytes * cqX8Offset(rows, groups, r, g))];
      for (int64_t i = 0; i < kGroup; ++i) {
        const unsigned index = (in[i / perByte] >> (bits * (i % perByte))) & ((1u << bits) - 1u);
        // Word 8v + l, bits bits·m, for column v·span + 8m + l.
        const int64_t word = 8 * (i / span) + i % 8, shift = bits * ((i % span) / 8);
        group[4 * word + shift / 8] |= static_cast<uint8_t>(index << (shift % 8));
      }
    }
  return out;
}

std::vector<uint8_t> blockCqX8Norms(const uint8_t *norms, int64_t rows, int64_t groups) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * groups * 2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      std::memcpy(&out[static_cast<size_t>(2 * cqX8Offset(rows, groups, r, g))], norms + 2 * (r * groups + g), 2);
  return out;
}

bool isCqMatvec(const KernelCall &call) { return call.kernel == "cq_matvec" || call.kernel == "cq_matmul"; }

void relayCqWeights(KernelProgram &program, const std::function<bool(const KernelCall &)> &chosen,
                    const CqRelayout &relayout) {
  std::set<int64_t> readElsewhere;
  forEachCall(program, [&](const KernelCall &call) {
    const bool relaid = isCqMatvec(call) && chosen(call);
    for (size_t i = relaid ? 2 : 0; i < call.args.size(); ++i)
      if (call.args[i].kind == KernelArg::Kind::Weight)
        readElsewhere.insert(call.args[i].value);
  });
  std::vector<uint8_t> &blob = program.weights;
  std::map<int64_t, int64_t> relaidOffset; // by the file layout's offset
  auto place = [&](int64_t offset, const std::vector<uint8_t> &bytes) {
    auto [it, inserted] = relaidOffset.try_emplace(offset, offset);
    if (!inserted)
      return it->second;
    if (readElsewhere.count(offset)) {
      blob.resize(static_cast<size_t>(roundUp(static_cast<int64_t>(blob.size()), kWeightAlign)), 0);
      it->second = static_cast<int64_t>(blob.size());
      blob.insert(blob.end(), bytes.begin(), bytes.end());
    } else {
      std::copy(bytes.begin(), bytes.end(), blob.begin() + offset);
    }
    return it->second;
  };
  auto relay = [&](KernelArg &arg, const KernelCall &call, const auto &layout) {
    if (!layout)
      return;
    if (relaidOffset.count(arg.value))
      arg.value = relaidOffset.at(arg.value);
    else
      arg.value = place(arg.value, layout(call, &blob[static_cast<size_t>(arg.value)]));
  };
  forEachCall(program, [&](KernelCall &call) {
    if (!isCqMatvec(call) || !chosen(call))
      return;
    relay(call.args[0], call, relayout.packed);
    relay(call.args[1], call, relayout.norms);
  });
}

void useCqX8Layout(KernelProgram &program, const std::string &matvec, const std::string &matmul) {
  auto fits = [](const KernelCall &call) { return call.args[3].value == 2 || call.args[3].value == 4; };
  CqRelayout layout;
  layout.packed = [](const KernelCall &call, const uint8_t *packed) {
    return interleaveCqX8(packed, call.args[4].value, cqGroups(call), static_cast<int>(call.args[3].value));
  };
  layout.norms = [](const KernelCall &call, const uint8_t *norms) {
    return blockCqX8Norms(norms, call.args[4].value, cqGroups(call));
  };
  relayCqWeights(program, fits, layout);
  forEachCall(program, [&](KernelCall &call) {
    if (isCqMatvec(call) && fits(call))
      call.kernel = call.kernel == "cq_matvec" ? matvec : matmul;
  });
}

} // namespace needle
