// Model-to-model transforms of the file layer: quantization, ladder slicing and LoRA merging.
#pragma once

#include "Model/Model.h"
#include "Quant/Cq.h"

#include <filesystem>

namespace needle {

/// Quantizes every float tensor the config's quantization.scheme marks CQ, with the model's
/// codebook for that width if it has one, else `codebook`'s.
void quantizeModel(Model &model, cq::CodebookKind codebook);

/// The depth-`depth` slice of spec/model.md: kept blocks renumbered 0..d-1, engram sites,
/// global layers and head rows remapped, source_blocks composed, ladder_order inherited.
Model sliceModel(const Model &model, int64_t depth, std::string_view source);

/// Merges W += (alpha / r) B A for every adapter pair in `adapter` (spec/model.md "LoRA").
void mergeLora(Model &model, const std::filesystem::path &adapter);

} // namespace needle
