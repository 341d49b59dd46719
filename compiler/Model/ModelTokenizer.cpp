#include "Model/ModelTokenizer.h"

#include "Support/Error.h"
#include "Support/Files.h"
#include "Tokenizer/Tables.h"
#include "Tokenizer/TokenizerJson.h"
#include "Tokenizer/Train.h"

#include <algorithm>
#include <set>

namespace needle {

void setTokenizer(Model &model, std::string text, const std::string &source, std::string config,
                  const std::string &configSource) {
  const tokenizer::TokenizerSpec spec = tokenizer::parseTokenizerJson(text, source);
  if (spec.idCount() > model.config.vocabSize)
    fail("{}: the tokenizer's {} token ids do not fit the model's vocab_size {}", source, spec.idCount(),
         model.config.vocabSize);
  if (!config.empty())
    tokenizer::parseTokenizerConfig(config, configSource, spec);
  model.tokenizerJson = std::move(text);
  model.tokenizerSource = source;
  model.tokenizerConfigJson = std::move(config);
  model.tokenizerConfigSource = configSource;
}

void readTokenizer(Model &model, const std::filesystem::path &path) {
  const std::vector<uint8_t> bytes = readFile(path, tokenizer::kMaxTokenizerBytes);
  const std::filesystem::path configPath = path.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  std::vector<uint8_t> config;
  if (std::filesystem::exists(configPath, ec))
    config = readFile(configPath, tokenizer::kMaxTokenizerBytes);
  setTokenizer(model, std::string(bytes.begin(), bytes.end()), path.string(), std::string(config.begin(), config.end()),
               configPath.string());
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

CompiledTokenizer compileTokenizer(const Model &model, tokenizer::TableLayout layout) {
  if (model.tokenizerJson.empty())
    return {};
  const tokenizer::TokenizerSpec spec = tokenizer::parseTokenizerJson(model.tokenizerJson, model.tokenizerSource);
  const tokenizer::TokenizerTables tables = tokenizer::buildTokenizerTables(spec, model.tokenizerSource, layout);
  CompiledTokenizer compiled;
  compiled.image = tables.image();
  const tokenizer::TokenizerConfig config =
      model.tokenizerConfigJson.empty()
          ? tokenizer::TokenizerConfig{}
          : tokenizer::parseTokenizerConfig(model.tokenizerConfigJson, model.tokenizerConfigSource, spec);
  compiled.bos = config.bos.value_or(spec.prefixIds.empty() ? -1 : spec.prefixIds.front());
  compiled.eos = config.eos.value_or(spec.suffixIds.empty() ? -1 : spec.suffixIds.back());
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

namespace {

/// The id one --stop entry names: an added token's by its content, else a decimal id.
int32_t stopToken(const std::string &entry, const CompiledTokenizer &tokenizer, int64_t vocabSize) {
  if (auto added = tokenizer.addedIds.find(entry); added != tokenizer.addedIds.end())
    return added->second;
  if (entry.empty() || entry.size() > 10 ||
      !std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fail("--stop: \"{}\" is neither an added token of the model's tokenizer nor a token id", entry);
  const int64_t id = std::stoll(entry);
  if (id >= vocabSize)
    fail("--stop: token id {} is not below the model's vocab_size {}", id, vocabSize);
  return int32_t(id);
}

} // namespace

std::vector<int32_t> stopTokens(const std::string &list, const CompiledTokenizer &tokenizer, int64_t vocabSize) {
  if (list.empty())
    return tokenizer.eos >= 0 ? std::vector<int32_t>{tokenizer.eos} : std::vector<int32_t>{};
  if (list == "none")
    return {};
  std::vector<int32_t> ids;
  std::set<int32_t> named; // a list may name every token of a large vocabulary
  for (size_t start = 0;;) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string entry = list.substr(start, comma - start);
    if (entry.empty())
      fail("--stop: an empty entry in \"{}\"; give added tokens or ids separated by commas", list);
    const int32_t id = stopToken(entry, tokenizer, vocabSize);
    if (!named.insert(id).second)
      fail("--stop: \"{}\" names token {} a second time", entry, id);
    ids.push_back(id);
    if (comma == list.size())
      return ids;
    start = comma + 1;
  }
}

} // namespace needle
