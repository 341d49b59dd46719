#include "Model/ModelTokenizer.h"

#include "Support/Error.h"
#include "Support/Files.h"
#include "Tokenizer/Tables.h"
#include "Tokenizer/TokenizerJson.h"
#include "Tokenizer/Train.h"

namespace needle {

void setTokenizer(Model &model, std::string text, const std::string &source) {
  const tokenizer::TokenizerSpec spec = tokenizer::parseTokenizerJson(text, source);
  if (spec.idCount() > model.config.vocabSize)
    fail("{}: the tokenizer's {} token ids do not fit the model's vocab_size {}", source, spec.idCount(),
         model.config.vocabSize);
  model.tokenizerJson = std::move(text);
  model.tokenizerSource = source;
}

void readTokenizer(Model &model, const std::filesystem::path &path) {
  const std::vector<uint8_t> bytes = readFile(path, tokenizer::kMaxTokenizerBytes);
  setTokenizer(model, std::string(bytes.begin(), bytes.end()), path.string());
}

namespace {

/// kSynthCorpus's files, one after the other; a missing one is an error naming its package.
std::string readSynthCorpus() {
  std::string corpus;
  for (const char *path : kSynthCorpus) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      fail("{}: missing: needle-synth trains its tokenizers on it (Debian's {}; scripts/install-deps.sh "
           "installs it), or give --tokenizer none",
           path, std::string_view(path).starts_with("/usr/share/dict") ? "wamerican" : "base-files");
    const std::vector<uint8_t> bytes = readFile(path);
    corpus.append(bytes.begin(), bytes.end());
  }
  return corpus;
}

} // namespace

void trainTokenizer(Model &model, const TokenizerTraining &training) {
  const int64_t size = model.config.vocabSize;
  if (size < 256)
    return;
  // 256: the bytes alone, nothing to learn
  const std::string corpus = size > 256 ? readSynthCorpus() + training.moreCorpus : std::string();
  const tokenizer::TokenizerSpec spec =
      training.split.empty() ? tokenizer::trainByteLevelBpe(corpus, size)
                             : tokenizer::trainByteLevelBpe(corpus, size, training.split, training.splitSource);
  setTokenizer(model, tokenizer::writeTokenizerJson(spec), fmt::format("needle-synth's tokenizer of {} tokens", size));
}

CompiledTokenizer compileTokenizer(const Model &model) {
  if (model.tokenizerJson.empty())
    return {};
  const tokenizer::TokenizerSpec spec = tokenizer::parseTokenizerJson(model.tokenizerJson, model.tokenizerSource);
  const tokenizer::TokenizerTables tables = tokenizer::buildTokenizerTables(spec, model.tokenizerSource);
  CompiledTokenizer compiled;
  compiled.image = tables.image();
  compiled.bos = spec.prefixIds.empty() ? -1 : spec.prefixIds.front();
  compiled.eos = spec.suffixIds.empty() ? -1 : spec.suffixIds.back();
  compiled.callTokens.resize(size_t(model.config.vocabSize));
  for (int32_t id = 0; id < tables.ids && id < model.config.vocabSize; ++id) {
    const auto *blob = reinterpret_cast<const char *>(tables.blob.data());
    compiled.callTokens[size_t(id)] =
        std::string(blob + tables.tokenOffsets[size_t(id)], blob + tables.tokenOffsets[size_t(id) + 1]);
  }
  for (const tokenizer::AddedToken &added : spec.added) {
    compiled.addedIds.emplace(added.content, added.id);
    if (added.special && added.id < model.config.vocabSize)
      compiled.callTokens[size_t(added.id)].reset();
  }
  return compiled;
}

} // namespace needle
