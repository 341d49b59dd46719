#include "Tokenizer/Train.h"

#include "Support/Error.h"
#include "Support/Json.h"
#include "Tokenizer/Regex.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

using Pair = std::pair<int32_t, int32_t>;

/// The corpus's pre-tokens as byte strings, and how often each occurs.
std::map<std::string, int64_t> countWords(std::string_view corpus, const Regex &pattern) {
  const std::vector<char32_t> points = decodeUtf8(corpus);
  std::map<std::string, int64_t> words;
  for (const auto &[begin, end] : pattern.splitIsolated(points))
    ++words[encodeUtf8(points, begin, end)];
  return words;
}

/// Pair counts over words (each weighted by its count), kept current as merges rewrite words,
/// and ranked: the best pair is the first of a set ordered by count, then ids, so a merge costs
/// the words it rewrites, not a scan of every pair (8,192 tokens from 1.3 MB in a second or two).
class PairCounts {
public:
  PairCounts(std::vector<std::vector<int32_t>> &words, const std::vector<int64_t> &weights)
      : words_(words), weights_(weights) {
    for (size_t w = 0; w < words_.size(); ++w)
      count(w, +1);
  }

  /// The most frequent pair, the smaller ids on a tie; its count is 0 when none is left.
  std::pair<Pair, int64_t> best() const {
    if (ranked_.empty())
      return {Pair{-1, -1}, 0};
    return {ranked_.begin()->second, -ranked_.begin()->first};
  }

  /// Replaces `pair` by `merged` in every word that holds it.
  void merge(Pair pair, int32_t merged) {
    const auto found = where_.find(key(pair));
    if (found == where_.end())
      return;
    std::vector<uint32_t> holders = std::move(found->second); // may repeat, or name words no longer holding it
    where_.erase(found);
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    for (uint32_t w : holders) {
      std::vector<int32_t> &word = words_[w];
      bool holds = false;
      for (size_t i = 0; i + 1 < word.size() && !holds; ++i)
        holds = Pair{word[i], word[i + 1]} == pair;
      if (!holds)
        continue;
      count(w, -1);
      size_t out = 0;
      for (size_t i = 0; i < word.size(); ++i) {
        const bool merges = i + 1 < word.size() && Pair{word[i], word[i + 1]} == pair;
        word[out++] = merges ? merged : word[i];
        i += merges;
      }
      word.resize(out);
      count(w, +1);
    }
  }

private:
  static uint64_t key(Pair pair) {
    return static_cast<uint64_t>(static_cast<uint32_t>(pair.first)) << 32 | static_cast<uint32_t>(pair.second);
  }

  void count(size_t w, int sign) {
    const std::vector<int32_t> &word = words_[w];
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const Pair pair{word[i], word[i + 1]};
      int64_t &n = counts_[key(pair)];
      if (n > 0)
        ranked_.erase({-n, pair});
      n += sign * weights_[w];
      if (n > 0)
        ranked_.insert({-n, pair});
      if (sign > 0)
        where_[key(pair)].push_back(static_cast<uint32_t>(w));
    }
  }

  std::vector<std::vector<int32_t>> &words_;
  const std::vector<int64_t> &weights_;
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where_; // the words that may hold a pair
  std::set<std::pair<int64_t, Pair>> ranked_;                 // (-count, pair) of every pair counted
};

} // namespace

TokenizerSpec trainByteLevelBpe(std::string_view corpus, int64_t vocabSize, std::string_view pattern,
                                const std::string &patternSource) {
  if (vocabSize < 256)
    fail("a byte-level tokenizer needs at least 256 tokens (one per byte), not {}", vocabSize);
  const Regex splitter(pattern, patternSource); // parsed even when unused: a bad pattern is an error
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
  for (const auto &[word, n] : vocabSize > 256 ? countWords(corpus, splitter) : std::map<std::string, int64_t>{}) {
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
  split.pattern = std::string(pattern);
  byteLevel.kind = PreTokenizerStep::Kind::ByteLevel;
  spec.preTokenizer = {split, byteLevel};
  DecoderStep decoder{};
  decoder.kind = DecoderStep::Kind::ByteLevel;
  spec.decoder = {decoder};
  return spec;
}

std::string writeTokenizerJson(const TokenizerSpec &spec) {
  if (spec.preTokenizer.empty() || spec.preTokenizer[0].kind != PreTokenizerStep::Kind::Split)
    fail("internal: writeTokenizerJson writes the trained tokenizers' shape, Split then ByteLevel");
  const BpeModel &model = spec.model;
  std::string out = R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [], )"
                    R"("normalizer": null, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [)"
                    R"({"type": "Split", "pattern": {"Regex": )";
  json::appendQuoted(out, spec.preTokenizer[0].pattern);
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
