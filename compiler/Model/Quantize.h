// Quantizing a float model to CQ, as its config's quantization.scheme says (cq-format.md).
#pragma once

#include "Model/Model.h"
#include "Quant/Cq.h"

#include <optional>

namespace needle {

/// Quantizes every float tensor the config's quantization.scheme marks CQ. A width the model
/// already has a codebook for (from pre-quantized tensors) keeps it; otherwise `requested`
/// (default: Needle's). Asking for a codebook that conflicts with the model's is an error.
void quantizeModel(Model &model, std::optional<cq::CodebookKind> requested);

} // namespace needle
