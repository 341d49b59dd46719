#include "codegen/Lower/WeightLayouts.h"

#include "Support/RoundUp.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace needle {

namespace {

constexpr int64_t kGroup = 128;    // the CQ group size (spec/cq.md)
constexpr int64_t kCq2x8Block = 4; // groups per block of the Cq2x8 layout (needle_rt::Cq2x8)

/// Where row r's group g goes in the Cq2x8 layout, counted in groups: blocks of kCq2x8Block
/// groups, each holding every row's groups in it, row after row.
int64_t cq2x8Offset(int64_t rows, int64_t groups, int64_t r, int64_t g) {
  const int64_t first = g - g % kCq2x8Block;
  return first * rows + r * std::min(kCq2x8Block, groups - first) + g % kCq2x8Block;
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

std::vector<uint8_t> interleaveCq2(const uint8_t *packed, int64_t rows, int64_t groups) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * groups * 32), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t *in = packed + (r * groups + g) * 32;
      uint8_t *group = &out[static_cast<size_t>(32 * cq2x8Offset(rows, groups, r, g))];
      for (int64_t i = 0; i < kGroup; ++i) {
        const unsigned index = (in[i / 4] >> (2 * (i % 4))) & 3u;
        // Word i % 8, bits 2·(i / 8): byte i / 32 of the word, bit 2·((i / 8) % 4) of the byte.
        group[4 * (i % 8) + i / 32] |= static_cast<uint8_t>(index << (2 * ((i / 8) % 4)));
      }
    }
  return out;
}

std::vector<uint8_t> blockCq2Norms(const uint8_t *norms, int64_t rows, int64_t groups) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * groups * 2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      std::memcpy(&out[static_cast<size_t>(2 * cq2x8Offset(rows, groups, r, g))], norms + 2 * (r * groups + g), 2);
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

void useInterleavedCq2(KernelProgram &program, const std::string &matvec, const std::string &matmul) {
  auto isCq2 = [](const KernelCall &call) { return call.args[3].value == 2; };
  CqRelayout interleaved;
  interleaved.packed = [](const KernelCall &call, const uint8_t *packed) {
    return interleaveCq2(packed, call.args[4].value, cqGroups(call));
  };
  interleaved.norms = [](const KernelCall &call, const uint8_t *norms) {
    return blockCq2Norms(norms, call.args[4].value, cqGroups(call));
  };
  relayCqWeights(program, isCq2, interleaved);
  forEachCall(program, [&](KernelCall &call) {
    if (isCqMatvec(call) && isCq2(call))
      call.kernel = call.kernel == "cq_matvec" ? matvec : matmul;
  });
}

} // namespace needle
