// The reference tokenizer: a TokenizerSpec's encoding written plainly from the format's
// definition (docs/tokenizer.md), checked against @huggingface/tokenizers on real tokenizer
// files. It is the oracle the compiled encoder will be checked against, as the reference
// interpreter is for the model. Plain C++, no MLIR.
#pragma once

#include "Tokenizer/Regex.h"
#include "Tokenizer/TokenizerSpec.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace needle::tokenizer {

/// `text` through the normalizer's steps, in order (NFC and NFKC on its valid UTF-8 runs, invalid
/// bytes kept).
std::string applyNormalizer(const std::vector<NormalizerStep> &steps, std::string text);

class ReferenceTokenizer {
public:
  /// Fails, naming `source`, for the parts of a valid spec it does not encode yet.
  ReferenceTokenizer(TokenizerSpec spec, std::string source);

  /// The ids of `text` (any bytes; c-interface.md says what invalid UTF-8 becomes), with the
  /// post-processor's tokens around them when `addSpecial`.
  std::vector<int32_t> encode(std::string_view text, bool addSpecial = false) const;

  /// The text of `ids` through the decoder's steps; fails for an id no token has. An invalid
  /// UTF-8 sequence in the result becomes U+FFFD, one for each maximal invalid subpart (as
  /// WHATWG's decoder and the oracle do). clean_up_tokenization_spaces is not applied.
  std::string decode(const std::vector<int32_t> &ids) const;

  const TokenizerSpec &spec() const { return spec_; }

  /// A part of a text split at added tokens: an added token's (`id`) or text between them (-1).
  struct Split {
    std::string_view text;
    size_t offset;
    int32_t id;
  };

private:
  /// The ids of a text between added tokens (`atStart`: it begins what is encoded): normalized,
  /// split by the normalized added tokens, each piece pre-tokenized and merged.
  void encodeSegment(std::string_view text, bool atStart, std::vector<int32_t> &ids) const;
  /// The ids of one piece of normalized text between added tokens.
  void encodePiece(std::string piece, bool atStart, std::vector<int32_t> &ids) const;
  /// BPE on one pre-token, spelled in the vocabulary's alphabet.
  void encodeWord(std::string_view word, std::vector<int32_t> &ids) const;

  TokenizerSpec spec_;
  std::unordered_map<std::string, int32_t> ids_;
  std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> merges_; // pair -> (rank, merged id)
  /// A pre-tokenizer step as the encoder runs it on each piece: its spaces replaced (Metaspace),
  /// a prefix put before it unless it starts with one (ByteLevel's add_prefix_space: a space;
  /// Metaspace's prepend scheme: the replacement, "first" only at the start of the text), then
  /// a split.
  struct PreTokenizerStage {
    std::string replaceSpaces, prefix;
    bool prefixAtStartOnly = false;
    std::optional<Regex> split;
    bool matchesOnly = false; // drop the text between matches
  };
  std::vector<PreTokenizerStage> stages_; // in order
  /// The added tokens matched in the text (normalized false) and those matched in its normalized
  /// pieces (normalized true: by their content normalized), each as the text it matches.
  std::vector<std::pair<std::string, const AddedToken *>> rawAdded_, normalizedAdded_;
  std::vector<std::string> tokens_; // by id: the vocabulary's or the added token's text
  bool byteLevel_ = false;
};

} // namespace needle::tokenizer
