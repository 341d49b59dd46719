// A Hugging Face tokenizer as needlec understands it (docs/tokenizer.md): the parts of
// tokenizer.json that the supported tokenizers use, validated, with token text in the
// vocabulary's own spelling (byte-level tokenizers spell bytes as GPT-2's printable characters).
// Plain data, no MLIR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace needle::tokenizer {

/// An added token: matched in the text before the model runs (docs/tokenizer.md).
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, normalized = false, singleWord = false;
};

/// A normalizer step, in order.
struct NormalizerStep {
  enum class Kind { Nfc, Nfkc, Prepend, Replace };
  Kind kind;
  std::string text, replacement; // Prepend: text; Replace: every `text` becomes `replacement`
};

/// A pre-tokenizer step, in order.
struct PreTokenizerStep {
  enum class Kind { Split, ByteLevel, Metaspace };
  Kind kind;
  std::string pattern;         // Split: the regex (Oniguruma syntax, as written)
  bool matchesOnly = false;    // Split: behavior Removed, inverted: the text between matches is dropped
  bool addPrefixSpace = false; // ByteLevel
  bool useRegex = false;       // ByteLevel: GPT-2's own split first
  std::string replacement;     // Metaspace: "▁"
  std::string prependScheme;   // Metaspace: "always", "first" or "never"
  bool split = false;          // Metaspace: split on the replacement
};

/// The pattern a ByteLevel pre-tokenizer with use_regex splits by (GPT-2's), as the Rust crate
/// has it: Oniguruma's `\s` (Unicode White_Space).
inline constexpr const char *kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// The pattern a Metaspace pre-tokenizer with split splits by: each piece starts at a
/// `replacement` (the Rust crate's MergedWithNext), so the text before the first one is a piece.
std::string metaspaceSplitPattern(const std::string &replacement);

/// The byte a byte_fallback token ("<0xXX>") stands for, or -1.
int fallbackByte(const std::string &token);

/// A decoder step, in order.
struct DecoderStep {
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
  Kind kind;
  std::string text, replacement; // Replace: text -> replacement; Strip: the content; Metaspace: replacement
  int64_t start = 0, stop = 0;   // Strip: characters removed at the start and the end
  std::string prependScheme;     // Metaspace
};

/// The BPE model.
struct BpeModel {
  std::vector<std::string> vocab;                  // by id; empty for an id no token has
  std::vector<std::pair<int32_t, int32_t>> merges; // by rank: the pair's token ids
  std::vector<int32_t> mergedIds;                  // by rank: the id of the pair's concatenation
  std::optional<int32_t> unk;
  bool byteFallback = false, fuseUnk = false, ignoreMerges = false;
};

struct TokenizerSpec {
  BpeModel model;
  std::vector<AddedToken> added; // in the file's order
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> preTokenizer;
  std::vector<DecoderStep> decoder;
  std::vector<int32_t> prefixIds, suffixIds; // the post-processor's tokens around one sequence (BOS, EOS)
  /// Ids in use are 0 .. idCount - 1 (the vocabulary's and the added tokens').
  int64_t idCount() const;
};

} // namespace needle::tokenizer
