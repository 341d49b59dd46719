// A model's tokenizer: the tokenizer.json a model carries (in a .needle file, or beside its
// config.json), validated as needlec's tokenizer reads it and held against the model's
// vocabulary (docs/tokenizer.md), and compiled for the code printers. No MLIR.
#pragma once

#include "Model/Model.h"
#include "Tokenizer/Tables.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace needle {

/// Gives `model` the tokenizer.json `text` after validating it and checking that its ids fit the
/// model's vocab_size (fewer leave the rest unused), with its tokenizer_config.json `config` when
/// there is one (empty: none; tokenizer::parseTokenizerConfig); errors name `source` and
/// `configSource`.
void setTokenizer(Model &model, std::string text, const std::string &source, std::string config = {},
                  const std::string &configSource = {});

/// Reads `path` as the model's tokenizer, with the tokenizer_config.json beside it if any
/// (setTokenizer).
void readTokenizer(Model &model, const std::filesystem::path &path);

/// What needle-synth trains its models' tokenizers on, in this order: Debian's license texts
/// (base-files, on every Debian system) for prose, and its American English word list
/// (wamerican) for the words prose alone runs out of before needle3's 8,192 tokens.
inline constexpr const char *kSynthCorpus[] = {
    "/usr/share/common-licenses/Apache-2.0", "/usr/share/common-licenses/Artistic", "/usr/share/common-licenses/BSD",
    "/usr/share/common-licenses/CC0-1.0",    "/usr/share/common-licenses/GFDL-1.3", "/usr/share/common-licenses/GPL-2",
    "/usr/share/common-licenses/GPL-3",      "/usr/share/common-licenses/LGPL-2.1", "/usr/share/common-licenses/LGPL-3",
    "/usr/share/common-licenses/MPL-1.1",    "/usr/share/common-licenses/MPL-2.0",  "/usr/share/dict/american-english"};

/// How needle-synth's tokenizer is trained beyond the defaults.
struct TokenizerTraining {
  std::string split;       // the pre-tokenizer's pattern; empty: Llama 3's
  std::string splitSource; // what errors about the pattern name
  std::string moreCorpus;  // text trained on after kSynthCorpus (a product's own words)
};

/// Gives `model` a byte-level BPE of exactly its vocab_size tokens trained on kSynthCorpus
/// (tokenizer::trainByteLevelBpe; the corpus is read only when there is something to learn,
/// past the 256 byte tokens). A vocabulary under 256 ids has no byte-level tokenizer: the model
/// is left without one.
void trainTokenizer(Model &model, const TokenizerTraining &training = {});

/// A model's tokenizer compiled for the printers: the image of its tables (needle_rt::TokImage)
/// and the ids NAME_info_t reports: the BOS and EOS its tokenizer_config.json names, else the
/// first the post-processor puts before a text and the last it puts after; -1 for none.
struct CompiledTokenizer {
  std::vector<uint8_t> image; // empty: the model has no tokenizer
  int32_t bos = -1, eos = -1;
  /// What a tool call may be written in: each id's bytes in a text (vocab_size of them), none for
  /// the special added tokens and the unused ids.
  std::vector<std::optional<std::string>> callTokens;
  std::map<std::string, int32_t> addedIds; // every added token by its content
};

/// Compiles the model's tokenizer; what the compiled tokenizer does not support is an error
/// naming the tokenizer's file and the part.
CompiledTokenizer compileTokenizer(const Model &model, tokenizer::TableLayout layout = tokenizer::TableLayout::Fast);

/// The ids needlec --stop LIST names (docs/command-line.md): comma-separated entries, each an
/// added token of `tokenizer` by its content or else a decimal id below `vocabSize`, in the order
/// given; "none" for no ids; an empty list for the default, the tokenizer's EOS (none when it has
/// none). An empty entry, an entry named twice and an unknown token are errors naming --stop.
std::vector<int32_t> stopTokens(const std::string &list, const CompiledTokenizer &tokenizer, int64_t vocabSize);

} // namespace needle
