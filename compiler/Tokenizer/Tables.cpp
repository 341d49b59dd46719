#include "Tokenizer/Tables.h"

#include "Support/Error.h"
#include "Tokenizer/Regex.h"
#include "Tokenizer/Scanner.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

/// What the compiled tokenizer carries so far: the byte-level family without a normalizer.
void checkSupported(const TokenizerSpec &spec, const std::string &source) {
  auto unsupported = [&](std::string_view what) {
    fail("{}: {} is not compiled yet (docs/tokenizer.md, \"The compiled tokenizer\")", source, what);
  };
  if (!spec.normalizer.empty())
    unsupported("normalizer: a normalizer");
  const bool byteLevel = std::any_of(spec.preTokenizer.begin(), spec.preTokenizer.end(), [](const auto &step) {
    return step.kind == PreTokenizerStep::Kind::ByteLevel;
  });
  if (!byteLevel)
    unsupported("pre_tokenizer: a tokenizer that is not byte-level");
  for (const PreTokenizerStep &step : spec.preTokenizer) {
    if (step.kind == PreTokenizerStep::Kind::Metaspace)
      unsupported("pre_tokenizer: Metaspace");
    if (step.kind == PreTokenizerStep::Kind::ByteLevel && step.addPrefixSpace)
      unsupported("pre_tokenizer: ByteLevel's add_prefix_space");
  }
  for (const DecoderStep &step : spec.decoder)
    if (step.kind != DecoderStep::Kind::ByteLevel)
      unsupported("decoder: a decoder step other than ByteLevel");
  if (spec.model.byteFallback || spec.model.unk)
    unsupported("model: byte_fallback or unk_token in a byte-level tokenizer");
}

/// The bytes a byte-level vocabulary token stands for: each alphabet character's byte.
std::string byteLevelBytes(const std::string &token) {
  static const std::unordered_map<char32_t, char> bytes = [] {
    std::unordered_map<char32_t, char> out;
    for (int b = 0; b < 256; ++b)
      out[byteLevelAlphabet()[b]] = static_cast<char>(b);
    return out;
  }();
  std::string out;
  for (char32_t c : decodeUtf8(token)) {
    if (auto it = bytes.find(c); it != bytes.end())
      out += it->second;
    else
      appendUtf8(out, c);
  }
  return out;
}

TokenizerTables::Split splitTables(const std::string &pattern, bool matchesOnly, const std::string &where) {
  const ScannerTables scanner = compileScanner(Regex(pattern, where));
  TokenizerTables::Split split;
  split.runStarts.assign(scanner.runStarts.begin(), scanner.runStarts.end());
  split.runSymbols.assign(scanner.symbolOf.begin(), scanner.symbolOf.end());
  split.symbols = static_cast<uint32_t>(scanner.symbols);
  split.invalidSymbol = scanner.invalidSymbol;
  split.endSymbol = scanner.endSymbol;
  split.next.assign(scanner.next.begin(), scanner.next.end());
  split.acceptBefore = scanner.acceptBefore;
  split.matchesOnly = matchesOnly;
  return split;
}

/// Slots for `count` entries at most half full: a power of two, at least 2.
size_t slotsFor(size_t count) { return std::bit_ceil(std::max<size_t>(2 * count, 2)); }

} // namespace

needle_rt::TokTables TokenizerTables::view() {
  splitViews_.clear();
  for (const Split &s : splits)
    splitViews_.push_back({s.runStarts.data(), s.runSymbols.data(), static_cast<uint32_t>(s.runStarts.size()),
                           s.symbols, s.invalidSymbol, s.endSymbol, s.next.data(), s.acceptBefore.data(),
                           s.matchesOnly});
  return {ids,
          blob.data(),
          tokenOffsets.data(),
          byteIds.data(),
          splitViews_.data(),
          static_cast<uint32_t>(splitViews_.size()),
          merges.data(),
          static_cast<uint32_t>(merges.size() - 1),
          words.empty() ? nullptr : words.data(),
          words.empty() ? 0u : static_cast<uint32_t>(words.size() - 1),
          added.data(),
          addedSpecial.data(),
          addedFirst.data(),
          prefixIds.data(),
          static_cast<uint32_t>(prefixIds.size()),
          suffixIds.data(),
          static_cast<uint32_t>(suffixIds.size())};
}

TokenizerTables buildTokenizerTables(const TokenizerSpec &spec, const std::string &source) {
  checkSupported(spec, source);
  TokenizerTables t;
  t.ids = static_cast<int32_t>(spec.idCount());
  std::vector<std::string> bytes(static_cast<size_t>(t.ids));
  for (size_t id = 0; id < spec.model.vocab.size(); ++id)
    bytes[id] = byteLevelBytes(spec.model.vocab[id]);
  for (const AddedToken &token : spec.added)
    bytes[token.id] = token.content;
  for (const std::string &token : bytes) {
    t.tokenOffsets.push_back(static_cast<uint32_t>(t.blob.size()));
    t.blob.insert(t.blob.end(), token.begin(), token.end());
  }
  t.tokenOffsets.push_back(static_cast<uint32_t>(t.blob.size()));

  std::unordered_map<std::string, int32_t> vocab; // a vocabulary token's bytes to its id
  for (size_t id = 0; id < spec.model.vocab.size(); ++id)
    if (!spec.model.vocab[id].empty())
      vocab.emplace(bytes[id], static_cast<int32_t>(id));
  for (int b = 0; b < 256; ++b)
    t.byteIds[b] = vocab.at(std::string(1, static_cast<char>(b))); // TokenizerJson checked they exist

  for (size_t i = 0; i < spec.preTokenizer.size(); ++i) {
    const PreTokenizerStep &step = spec.preTokenizer[i];
    const std::string where = fmt::format("{}: pre_tokenizer step {}", source, i);
    if (step.kind == PreTokenizerStep::Kind::Split)
      t.splits.push_back(splitTables(step.pattern, step.matchesOnly, where));
    else if (step.kind == PreTokenizerStep::Kind::ByteLevel && step.useRegex)
      t.splits.push_back(splitTables(kByteLevelPattern, false, where));
  }

  t.merges.assign(slotsFor(spec.model.merges.size()), needle_rt::TokMerge{-1, -1, -1, -1});
  for (size_t rank = 0; rank < spec.model.merges.size(); ++rank) {
    const auto [left, right] = spec.model.merges[rank];
    uint32_t slot = needle_rt::tok_hash_pair(left, right) & (t.merges.size() - 1);
    while (t.merges[slot].left >= 0)
      slot = (slot + 1) & (t.merges.size() - 1);
    t.merges[slot] = {left, right, static_cast<int32_t>(rank), spec.model.mergedIds[rank]};
  }
  if (spec.model.ignoreMerges) {
    t.words.assign(slotsFor(vocab.size()), needle_rt::TokWord{-1, 0});
    for (size_t id = 0; id < spec.model.vocab.size(); ++id) { // by id: the same tables every time
      if (spec.model.vocab[id].empty())
        continue;
      const uint32_t hash =
          needle_rt::tok_hash_bytes(reinterpret_cast<const uint8_t *>(bytes[id].data()), bytes[id].size());
      uint32_t slot = hash & (t.words.size() - 1);
      while (t.words[slot].id >= 0)
        slot = (slot + 1) & (t.words.size() - 1);
      t.words[slot] = {static_cast<int32_t>(id), hash};
    }
  }

  std::vector<const AddedToken *> added;
  for (const AddedToken &token : spec.added)
    added.push_back(&token);
  std::stable_sort(added.begin(), added.end(), [](const AddedToken *a, const AddedToken *b) {
    const auto first = [](const AddedToken *x) { return static_cast<unsigned char>(x->content[0]); };
    return first(a) != first(b) ? first(a) < first(b) : a->content.size() > b->content.size();
  });
  for (const AddedToken *token : added) {
    t.added.push_back(token->id);
    t.addedSpecial.push_back(token->special);
    ++t.addedFirst[static_cast<unsigned char>(token->content[0]) + 1];
  }
  for (size_t b = 1; b < t.addedFirst.size(); ++b)
    t.addedFirst[b] += t.addedFirst[b - 1];
  t.prefixIds = spec.prefixIds;
  t.suffixIds = spec.suffixIds;
  return t;
}

} // namespace needle::tokenizer
