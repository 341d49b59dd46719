// Training a byte-level BPE tokenizer (docs/tokenizer.md, "Training"): what needle-synth will
// give every preset, so that the demo and the tests have text in and out. Deterministic for a
// corpus and a size. Plain C++, no MLIR.
#pragma once

#include "Tokenizer/TokenizerSpec.h"

#include <string>
#include <string_view>

namespace needle::tokenizer {

/// Llama 3's pre-tokenizer pattern, which the trained tokenizers use.
inline constexpr const char *kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// A byte-level BPE of exactly `vocabSize` tokens (at least 256: every byte is one) trained on
/// `corpus`: the corpus is cut into pre-tokens by `pattern` (the Split pre-tokenizer's regex,
/// Isolated), and the most frequent adjacent pair (the smaller ids on a tie) is merged until the
/// vocabulary is full. Fails when the corpus runs out of pairs first, or when the pattern is not
/// one the tokenizer compiler takes (the error names `patternSource`).
TokenizerSpec trainByteLevelBpe(std::string_view corpus, int64_t vocabSize, std::string_view pattern = kLlama3Pattern,
                                const std::string &patternSource = "the training pattern");

/// `spec` as tokenizer.json text (for the trained tokenizers' shape: Split + ByteLevel, BPE).
std::string writeTokenizerJson(const TokenizerSpec &spec);

} // namespace needle::tokenizer
