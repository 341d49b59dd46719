#include "Tokenizer/Train.h"

#include "Support/Error.h"
#include "Support/Json.h"
#include "Tokenizer/Regex.h"
#include "Tokenizer/Unicode.h"

#include <map>
#include <set>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

using Pair = std::pair<int32_t, int32_t>;

/// The corpus's pre-tokens as byte strings, and how often each occurs.
std::map<std::string, int64_t> countWords(std::string_view corpus) {
  const Regex pattern(kLlama3Pattern, "the training pattern");
  const std::vector<char32_t> points = decodeUtf8(corpus);
  std::map<std::string, int64_t> words;
  for (const auto &[begin, end] : pattern.splitIsolated(points))
    ++words[encodeUtf8(points, begin, end)];
  return words;
}

/// Pair counts over words (each weighted by its count), kept current as merges rewrite words.
class PairCounts {
public:
  PairCounts(std::vector<std::vector<int32_t>> &words, const std::vector<int64_t> &weights)
      : words_(words), weights_(weights) {
    for (size_t w = 0; w < words_.size(); ++w)
      count(w, +1);
  }

  /// The most frequent pair, the smaller ids on a tie; its count is 0 when none is left.
  std::pair<Pair, int64_t> best() const {
    Pair bestPair{-1, -1};
    int64_t bestCount = 0;
    for (const auto &[pair, n] : counts_)
      if (n > bestCount)
        bestPair = pair, bestCount = n;
    return {bestPair, bestCount};
  }

  /// Replaces `pair` by `merged` in every word that holds it.
  void merge(Pair pair, int32_t merged) {
    const std::set<size_t> holders = where_[pair];
    for (size_t w : holders) {
      count(w, -1);
      std::vector<int32_t> &word = words_[w];
      std::vector<int32_t> out;
      for (size_t i = 0; i < word.size(); ++i) {
        if (i + 1 < word.size() && Pair{word[i], word[i + 1]} == pair) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(word[i]);
        }
      }
      word = std::move(out);
      count(w, +1);
    }
  }

private:
  void count(size_t w, int sign) {
    const std::vector<int32_t> &word = words_[w];
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const Pair pair{word[i], word[i + 1]};
      int64_t &n = counts_[pair];
      n += sign * weights_[w];
      if (sign > 0)
        where_[pair].insert(w);
      if (n == 0) {
        counts_.erase(pair);
        where_.erase(pair);
      }
    }
  }

  std::vector<std::vector<int32_t>> &words_;
  const std::vector<int64_t> &weights_;
  std::map<Pair, int64_t> counts_;
  std::map<Pair, std::set<size_t>> where_;
};

} // namespace

TokenizerSpec trainByteLevelBpe(std::string_view corpus, int64_t vocabSize) {
  if (vocabSize < 256)
    fail("a byte-level tokenizer needs at least 256 tokens (one per byte), not {}", vocabSize);
  TokenizerSpec spec;
  BpeModel &model = spec.model;
  std::unordered_map<std::string, int32_t> ids;
  for (int b = 0; b < 256; ++b) {
    std::string token;
    appendUtf8(token, byteLevelAlphabet()[b]);
    model.vocab.push_back(token);
    ids.emplace(model.vocab.back(), b);
  }
  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> weights;
  for (const auto &[word, n] : countWords(corpus)) {
    words.emplace_back(word.begin(), word.end());
    for (int32_t &symbol : words.back())
      symbol = static_cast<unsigned char>(symbol);
    weights.push_back(n);
  }
  PairCounts pairs(words, weights);
  while (static_cast<int64_t>(model.vocab.size()) < vocabSize) {
    const auto [pair, n] = pairs.best();
    if (n == 0)
      fail("the corpus ({} bytes) makes only {} tokens; a tokenizer of {} needs more text", corpus.size(),
           model.vocab.size(), vocabSize);
    // Two pairs may spell the same token ("ab"+"c", "a"+"bc"): the token keeps its first id.
    const std::string text = model.vocab[pair.first] + model.vocab[pair.second];
    auto [it, added] = ids.emplace(text, static_cast<int32_t>(model.vocab.size()));
    if (added)
      model.vocab.push_back(text);
    model.merges.push_back(pair);
    model.mergedIds.push_back(it->second);
    pairs.merge(pair, it->second);
  }
  PreTokenizerStep split{}, byteLevel{};
  split.kind = PreTokenizerStep::Kind::Split;
  split.pattern = kLlama3Pattern;
  byteLevel.kind = PreTokenizerStep::Kind::ByteLevel;
  spec.preTokenizer = {split, byteLevel};
  DecoderStep decoder{};
  decoder.kind = DecoderStep::Kind::ByteLevel;
  spec.decoder = {decoder};
  return spec;
}

std::string writeTokenizerJson(const TokenizerSpec &spec) {
  const BpeModel &model = spec.model;
  std::string out = R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [], )"
                    R"("normalizer": null, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [)"
                    R"({"type": "Split", "pattern": {"Regex": )";
  json::appendQuoted(out, kLlama3Pattern);
  out +=
      R"(}, "behavior": "Isolated", "invert": false}, )"
      R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]}, )"
      R"("post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true}, )"
      R"("decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}, )"
      R"("model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, )"
      R"("end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,)"
      "\n\"vocab\": {";
  for (size_t id = 0; id < model.vocab.size(); ++id) {
    out += id ? ",\n" : "\n";
    json::appendQuoted(out, model.vocab[id]);
    out += fmt::format(": {}", id);
  }
  out += "},\n\"merges\": [";
  for (size_t rank = 0; rank < model.merges.size(); ++rank) {
    out += rank ? ",\n[" : "\n[";
    json::appendQuoted(out, model.vocab[model.merges[rank].first]);
    out += ", ";
    json::appendQuoted(out, model.vocab[model.merges[rank].second]);
    out += "]";
  }
  return out + "]}}\n";
}

} // namespace needle::tokenizer
