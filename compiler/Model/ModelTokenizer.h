// A model's tokenizer: the tokenizer.json a model carries (in a .needle file, or beside its
// config.json), validated as needlec's tokenizer reads it and held against the model's
// vocabulary (docs/tokenizer.md). No MLIR.
#pragma once

#include "Model/Model.h"

#include <filesystem>
#include <string>

namespace needle {

/// Gives `model` the tokenizer.json `text` after validating it and checking that its ids fit the
/// model's vocab_size (fewer leave the rest unused); errors name `source`.
void setTokenizer(Model &model, std::string text, const std::string &source);

/// Reads `path` as the model's tokenizer (setTokenizer).
void readTokenizer(Model &model, const std::filesystem::path &path);

} // namespace needle
