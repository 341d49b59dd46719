// Merging a LoRA adapter into a float model (model.md, LoRA).
#pragma once

#include "Model/Model.h"

#include <filesystem>

namespace needle {

/// Merges W += (alpha / r) B A for every adapter pair in `adapter`.
void mergeLora(Model &model, const std::filesystem::path &adapter);

} // namespace needle
