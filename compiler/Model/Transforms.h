// Model-to-model transforms of the file layer: quantization, ladder slicing and LoRA merging.
#pragma once

#include "Model/Model.h"
#include "Quant/Cq.h"

#include <filesystem>
#include <optional>

namespace needle {

/// Quantizes every float tensor the config's quantization.scheme marks CQ. A width the model
/// already has a codebook for (from pre-quantized tensors) keeps it; otherwise `requested`
/// (default: Needle's). Asking for a codebook that conflicts with the model's is an error.
void quantizeModel(Model &model, std::optional<cq::CodebookKind> requested);

/// The depth-`depth` slice of spec/model.md: kept blocks renumbered 0..d-1, engram sites,
/// global layers and head rows remapped, source_blocks composed, ladder_order inherited.
Model sliceModel(const Model &model, int64_t depth, std::string_view source);

/// Merges W += (alpha / r) B A for every adapter pair in `adapter` (spec/model.md "LoRA").
void mergeLora(Model &model, const std::filesystem::path &adapter);

} // namespace needle
