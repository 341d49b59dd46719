#include "Model/Slice.h"
#include "Model/Ladder.h"
#include "Model/Layout.h"
#include "Support/Error.h"

#include <algorithm>

namespace needle {

namespace {

/// Keeps head rows `rows` along `axis` of a float tensor.
Tensor selectHeadRows(const Tensor &t, size_t axis, const std::vector<int64_t> &rows) {
  Tensor out = t;
  out.shape[axis] = static_cast<int64_t>(rows.size());
  out.floats = selectRows(t.floats, t.shape, axis, rows);
  return out;
}

std::vector<int64_t> remap(const std::vector<int64_t> &ids, const std::vector<int64_t> &newIndex) {
  std::vector<int64_t> out;
  for (int64_t id : ids)
    if (newIndex[id] >= 0)
      out.push_back(newIndex[id]);
  return out;
}

} // namespace

Model sliceModel(const Model &model, int64_t depth, std::string_view source) {
  const Config &parent = model.config;
  validateDepth(depth, parent.numLayers, source);
  const std::vector<int64_t> order = parent.order(), kept = keptBlocks(order, depth), sources = parent.sources();
  std::vector<int64_t> newIndex(parent.numLayers, -1);
  for (size_t i = 0; i < kept.size(); ++i)
    newIndex[kept[i]] = static_cast<int64_t>(i);

  Model slice;
  slice.codebooks = model.codebooks;
  slice.provenance = model.provenance;
  slice.tokenizerJson = model.tokenizerJson; // every depth reads the same text
  slice.tokenizerSource = model.tokenizerSource;
  slice.tokenizerConfigJson = model.tokenizerConfigJson;
  slice.tokenizerConfigSource = model.tokenizerConfigSource;
  Config &c = slice.config = parent;
  c.numLayers = depth;
  c.globalLayers = remap(parent.globalLayers, newIndex);
  c.engramLayers = remap(parent.engramLayers, newIndex);
  c.ladderOrder = remap(order, newIndex);
  c.sourceBlocks.emplace();
  for (int64_t id : kept)
    c.sourceBlocks->push_back(sources[id]);

  std::vector<int64_t> headRows = {0};
  for (int64_t id : kept)
    headRows.push_back(id + 1);
  std::vector<int64_t> newSite(parent.engramLayers.size(), -1);
  for (size_t s = 0, next = 0; s < parent.engramLayers.size(); ++s)
    if (newIndex[parent.engramLayers[s]] >= 0)
      newSite[s] = static_cast<int64_t>(next++);

  for (const auto &[name, t] : model.tensors) {
    const TensorOwner owner = tensorOwner(name);
    if (owner.kind == TensorOwner::Kind::Block) {
      if (newIndex[owner.index] >= 0)
        slice.tensors[fmt::format("blocks.{}.{}", newIndex[owner.index], owner.leaf)] = t;
    } else if (owner.kind == TensorOwner::Kind::Engram) {
      if (newSite[owner.index] >= 0)
        slice.tensors[fmt::format("engram.{}.{}", newSite[owner.index], owner.leaf)] = t;
    } else if (name.ends_with(".probes") || name.ends_with(".gain") || name.ends_with(".row_bias")) {
      slice.tensors[name] = selectHeadRows(t, headRowAxis(name), headRows);
    } else {
      slice.tensors[name] = t;
    }
  }
  std::string blocks;
  for (int64_t id : kept)
    blocks += fmt::format("{}{}", blocks.empty() ? "" : " ", id);
  slice.provenance.push_back(fmt::format("sliced {} -> {} blocks: kept {}", parent.numLayers, depth, blocks));
  return slice;
}

} // namespace needle
