// The resource limits every tool enforces on what a file says, checked before any large
// allocation (docs/reliability.md lists them). They sit far above any real Needle model.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace needle {

/// Elements in any one tensor: a model's, or a value in IR (1 GiB as f32; needle3's largest
/// tensor has 6.3 million).
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 28;
/// Elements of a constant a folder may materialise (4 MiB as f32): folding a rotation of a
/// splat near kMaxTensorElements would otherwise turn a few bytes of IR into gigabytes.
/// Larger rotations of constants stay in the IR and run with the model.
inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 20;
/// Dimensions of any one tensor (needle's tensors have at most 3).
inline constexpr size_t kMaxTensorRank = 8;
/// config.json and adapter configs are a few kilobytes.
inline constexpr uint64_t kMaxConfigBytes = uint64_t(1) << 20;
/// A safetensors JSON header: a 1024-block model with every tensor pre-quantized needs ~6 MiB.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t(16) << 20;
/// needle-dialect IR text (it names its weights file; needle3's IR is under 1 MiB).
inline constexpr uint64_t kMaxIrBytes = uint64_t(64) << 20;
/// Brackets ({ [ ( <) open at once in IR text: MLIR's parser recurses once per level.
inline constexpr int kMaxIrNesting = 64;

/// The product of `shape`, or -1 when a dimension is negative or the product passes `limit`.
int64_t elementCountWithin(std::span<const int64_t> shape, int64_t limit = kMaxTensorElements);

/// Operators (+ - * floordiv ceildiv mod) in one affine_map<...> or affine_set<...> of IR text:
/// MLIR's parser recurses once per operator of a chain, without any bracket, and simplifies
/// each expression in time that grows faster than its length.
inline constexpr int kMaxAffineOperators = 256;

/// Fails (naming `source` and the line) when IR text nests brackets deeper than kMaxIrNesting
/// or chains more than kMaxAffineOperators operators in one affine map or set, before MLIR's
/// recursive parser could exhaust the stack on it.
void checkIrNesting(std::string_view text, std::string_view source);

} // namespace needle
