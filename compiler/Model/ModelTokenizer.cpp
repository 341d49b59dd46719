#include "Model/ModelTokenizer.h"

#include "Support/Error.h"
#include "Support/Files.h"
#include "Tokenizer/TokenizerJson.h"

namespace needle {

void setTokenizer(Model &model, std::string text, const std::string &source) {
  const tokenizer::TokenizerSpec spec = tokenizer::parseTokenizerJson(text, source);
  if (spec.idCount() > model.config.vocabSize)
    fail("{}: the tokenizer's {} token ids do not fit the model's vocab_size {}", source, spec.idCount(),
         model.config.vocabSize);
  model.tokenizerJson = std::move(text);
}

void readTokenizer(Model &model, const std::filesystem::path &path) {
  const std::vector<uint8_t> bytes = readFile(path, tokenizer::kMaxTokenizerBytes);
  setTokenizer(model, std::string(bytes.begin(), bytes.end()), path.string());
}

} // namespace needle
