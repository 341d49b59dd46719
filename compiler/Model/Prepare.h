// The file-level front of every tool: load a model, give it a tokenizer, merge a LoRA adapter,
// quantize what the scheme marks CQ, then slice to the requested depth (docs/model.md; the pipeline in
// docs/architecture.md).
#pragma once

#include "Model/Model.h"
#include "Quant/Cq.h"

#include <filesystem>
#include <optional>

namespace needle {

struct PrepareOptions {
  std::optional<int64_t> layers;     // slice to this depth
  std::optional<int64_t> shallowest; // --layers A..B: A, checked here, the rungs down to it cut later
  std::optional<std::filesystem::path> lora;
  /// --tokenizer: a tokenizer.json in place of the one the model carries; "none" drops it unread.
  std::optional<std::filesystem::path> tokenizer;
  std::optional<cq::CodebookKind> codebook; // --codebook; absent: the model's, else Needle's
};

/// Sets *transformed when the result differs from the file's model (merged, quantized, sliced).
Model prepareModel(const std::filesystem::path &input, const PrepareOptions &options, bool *transformed = nullptr);

} // namespace needle
