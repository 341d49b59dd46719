// Checks a model's tensors against the layout its config implies, and fills tensors from raw
// bytes with their sizes checked. Shared by every reader, so every format is held to one rule.
#pragma once

#include "Model/Model.h"

#include <span>
#include <string_view>

namespace needle {

/// Every tensor of modelLayout() is present (optional ones may be absent) with its shape and an
/// allowed storage, nothing else is present, CQ payloads and codebooks are consistent, float
/// values are finite and permutations are permutations. Errors name `source` and the tensor.
void validateModel(const Model &model, std::string_view source);

/// Fills an F32/F16/I32 tensor (storage and shape set) from little-endian bytes.
void setPlainPayload(Tensor &t, std::span<const uint8_t> bytes, std::string_view where);

/// Fills a CQ tensor (bits and shape set) from packed indices followed by fp16 norms.
void setCqPayload(Tensor &t, std::span<const uint8_t> bytes, std::string_view where);

} // namespace needle
