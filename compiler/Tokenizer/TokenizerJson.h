// Reading a Hugging Face tokenizer.json into a TokenizerSpec (docs/tokenizer.md). Strict: every
// field the supported tokenizers use is checked, and anything else (another model type, an
// unknown field, a post-processor of another kind) is a one-line error naming the file and the
// JSON path of the part, never a silent difference. Plain C++, no MLIR.
#pragma once

#include "Tokenizer/TokenizerSpec.h"

#include <filesystem>
#include <optional>
#include <string_view>

namespace needle::tokenizer {

/// Ids a tokenizer may use: 0 .. kMaxTokenIds - 1. Real vocabularies stop near 262,144 (Gemma);
/// every table by id is this long at most, so a hostile id cannot make it gigabytes.
inline constexpr int64_t kMaxTokenIds = int64_t(1) << 20;
/// Added tokens in one tokenizer (real ones have a few hundred; each is matched in every text).
inline constexpr size_t kMaxAddedTokens = size_t(1) << 16;
/// A tokenizer.json file (Qwen 3's is 11 MB, with 0.6 million JSON values).
inline constexpr uint64_t kMaxTokenizerBytes = uint64_t(64) << 20;
inline constexpr size_t kMaxTokenizerJsonValues = size_t(1) << 22;

/// Parses the text of a tokenizer.json; errors name `source`.
TokenizerSpec parseTokenizerJson(std::string_view text, std::string_view source);

/// Reads and parses `path` (at most kMaxTokenizerBytes).
TokenizerSpec readTokenizerJson(const std::filesystem::path &path);

/// What needlec takes from a tokenizer_config.json (docs/tokenizer.md, "A model's tokenizer"):
/// the ids of the tokens its bos_token and eos_token name, when it names them.
struct TokenizerConfig {
  std::optional<int32_t> bos, eos;
};

/// Parses the text of the tokenizer_config.json of `spec`: its bos_token and eos_token (a string,
/// or an object with the token's content; null or absent: not named), each an added token's
/// content or a vocabulary token; other fields are the transformers library's and are not read.
/// Errors name `source` and the field.
TokenizerConfig parseTokenizerConfig(std::string_view text, std::string_view source, const TokenizerSpec &spec);

} // namespace needle::tokenizer
