// Merging a LoRA adapter into a float model (model.md, LoRA).
#pragma once

#include "Model/Model.h"
#include "Model/Safetensors.h"

#include <filesystem>

namespace needle {

/// Merges W += (alpha / r) B A for every adapter pair in `adapter`.
void mergeLora(Model &model, const std::filesystem::path &adapter);

/// The same, from an adapter already read (the fuzzers' in-memory entry point).
void mergeLora(Model &model, const SafetensorsFile &adapter);

} // namespace needle
