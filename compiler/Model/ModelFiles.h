// Reading and writing models in their file forms: a .needle file, a directory holding
// config.json + model.safetensors, or a .safetensors file with config.json beside it.
#pragma once

#include "Model/Model.h"
#include "Model/Safetensors.h"

#include <filesystem>

namespace needle {

/// Loads and fully validates a model from any of its file forms, with its tokenizer (unless not
/// `withTokenizer`): the one a .needle file carries, or tokenizer.json beside config.json.
Model loadModel(const std::filesystem::path &path, bool withTokenizer = true);

/// Reads config.json + safetensors (float or pre-quantized CQ tensors).
Model loadSafetensorsModel(const std::filesystem::path &configPath, const std::filesystem::path &tensorsPath);

/// The model `config` describes, with the tensors of `file` (loadSafetensorsModel once both are
/// read; the fuzzers' in-memory entry point). Errors name file.path().
Model modelFromSafetensors(const Config &config, const SafetensorsFile &file);

/// Writes `dir`/config.json and `dir`/model.safetensors (and `dir`/tokenizer.json when the model
/// has one). CQ tensors are written pre-quantized (X.cq_idx, X.cq_norm, X.cq_bits) with their
/// codebooks in the metadata.
void writeSafetensorsModel(const Model &model, const std::filesystem::path &dir);

/// Writes a .needle file.
void writeNeedleModel(const Model &model, const std::filesystem::path &path);

} // namespace needle
