// Ladder slicing of a model file (model.md, The ladder): the file-level twin of the
// needle-slice-depth pass.
#pragma once

#include "Model/Model.h"

#include <string_view>

namespace needle {

/// The depth-`depth` slice: kept blocks renumbered 0..d-1, engram sites, global layers and head
/// rows remapped, source_blocks composed, ladder_order inherited.
Model sliceModel(const Model &model, int64_t depth, std::string_view source);

} // namespace needle
