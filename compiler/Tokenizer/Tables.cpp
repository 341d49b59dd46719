#include "Tokenizer/Tables.h"

#include "Support/Error.h"
#include "Support/ImageWriter.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/Regex.h"
#include "Tokenizer/Scanner.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

[[noreturn]] void unsupported(const std::string &source, std::string_view what) {
  fail("{}: {} is not compiled yet (docs/tokenizer.md, \"The compiled tokenizer\")", source, what);
}

bool isByteLevel(const TokenizerSpec &spec) {
  return std::any_of(spec.preTokenizer.begin(), spec.preTokenizer.end(),
                     [](const PreTokenizerStep &step) { return step.kind == PreTokenizerStep::Kind::ByteLevel; });
}

/// The byte-level family: NFC or NFKC at most, splits then ByteLevel, the ByteLevel decoder.
void checkByteLevel(const TokenizerSpec &spec, const std::string &source) {
  for (const NormalizerStep &step : spec.normalizer)
    if (step.kind != NormalizerStep::Kind::Nfc && step.kind != NormalizerStep::Kind::Nfkc)
      unsupported(source, "normalizer: Prepend or Replace in a byte-level tokenizer");
  for (const DecoderStep &step : spec.decoder)
    if (step.kind != DecoderStep::Kind::ByteLevel)
      unsupported(source, "decoder: a step other than ByteLevel in a byte-level tokenizer");
  if (spec.model.byteFallback || spec.model.unk)
    unsupported(source, "model: byte_fallback or unk_token in a byte-level tokenizer");
}

/// The SentencePiece-style family: any normalizer steps, no pre-tokenizer or one Metaspace; the
/// decoder's Replace steps and ByteFallback, Fuse, then at most a Strip of leading spaces, or a
/// Metaspace decoder alone; a character no token spells has its byte tokens or the unknown token.
void checkSentencePiece(const TokenizerSpec &spec, const std::string &source) {
  if (spec.preTokenizer.size() > 1 ||
      (spec.preTokenizer.size() == 1 && spec.preTokenizer[0].kind != PreTokenizerStep::Kind::Metaspace))
    unsupported(source, "pre_tokenizer: a pre-tokenizer other than one Metaspace in a SentencePiece-style tokenizer");
  if (!spec.model.unk && !spec.model.byteFallback)
    unsupported(source, "model: a tokenizer with neither unk_token nor byte_fallback");
  if (spec.decoder.size() == 1 && spec.decoder[0].kind == DecoderStep::Kind::Metaspace)
    return;
  bool fused = false;
  for (size_t i = 0; i < spec.decoder.size(); ++i) {
    const DecoderStep &step = spec.decoder[i];
    const bool lastStrip = step.kind == DecoderStep::Kind::Strip && i + 1 == spec.decoder.size() && fused &&
                           step.text == " " && step.stop == 0 && step.start <= 255;
    if (step.kind == DecoderStep::Kind::Metaspace || step.kind == DecoderStep::Kind::ByteLevel ||
        (step.kind == DecoderStep::Kind::Strip && !lastStrip) || (fused && step.kind != DecoderStep::Kind::Strip))
      unsupported(source, fmt::format("decoder: step {} in this order", i));
    fused |= step.kind == DecoderStep::Kind::Fuse;
  }
}

/// The bytes a byte-level vocabulary token stands for: each alphabet character's byte.
std::string byteLevelBytes(const std::string &token) {
  std::string out;
  for (char32_t c : decodeUtf8(token)) {
    if (const int b = byteLevelByte(c); b >= 0)
      out += static_cast<char>(b);
    else
      appendUtf8(out, c);
  }
  return out;
}

/// A SentencePiece-style token's bytes in a text: the decoder's Replace steps applied to it (a
/// Metaspace decoder's replacement becomes a space), then, with a ByteFallback step, a "<0xXX>"
/// token its byte.
std::string sentencePieceBytes(std::string token, const std::vector<DecoderStep> &decoder) {
  bool byteFallback = false;
  for (const DecoderStep &step : decoder) {
    byteFallback |= step.kind == DecoderStep::Kind::ByteFallback;
    const bool replaces = step.kind == DecoderStep::Kind::Replace || step.kind == DecoderStep::Kind::Metaspace;
    const std::string &from = step.kind == DecoderStep::Kind::Replace ? step.text : step.replacement;
    const std::string to = step.kind == DecoderStep::Kind::Replace ? step.replacement : " ";
    if (replaces && !from.empty())
      for (size_t at = token.find(from); at != std::string::npos; at = token.find(from, at + to.size()))
        token.replace(at, from.size(), to);
  }
  const int byte = byteFallback ? fallbackByte(token) : -1;
  return byte < 0 ? token : std::string(1, static_cast<char>(byte));
}

TokenizerTables::Split splitTables(const std::string &pattern, bool matchesOnly, const std::string &where) {
  const ScannerTables scanner = compileScanner(Regex(pattern, where));
  TokenizerTables::Split split;
  split.runStarts.assign(scanner.runStarts.begin(), scanner.runStarts.end());
  split.runSymbols.assign(scanner.symbolOf.begin(), scanner.symbolOf.end());
  for (char32_t c = 0; c < 128; ++c)
    split.asciiSymbols[c] = static_cast<uint8_t>(scanner.symbol(c));
  split.symbols = static_cast<uint32_t>(scanner.symbols);
  split.invalidSymbol = scanner.invalidSymbol;
  split.endSymbol = scanner.endSymbol;
  split.next.assign(scanner.next.begin(), scanner.next.end());
  split.acceptBefore = scanner.acceptBefore;
  split.matchesOnly = matchesOnly;
  return split;
}

/// Where ByteLevel's add_prefix_space after the first step puts its space: before each piece of
/// the splits so far (on the first step, a normalizer step puts it before each text instead;
/// the reader takes ByteLevel as the last step only, so there is one such space at most).
uint32_t spaceLevelOf(const TokenizerTables &t, const std::string &where) {
  if (t.splits.empty())
    unsupported(where, "ByteLevel's add_prefix_space after a step that does not split");
  return static_cast<uint32_t>(t.splits.size());
}

/// Slots for `count` entries at most `load` (a fraction) full, at least 2.
size_t slotsFor(size_t count, double load) { return std::max<size_t>(static_cast<size_t>(std::ceil(count / load)), 2); }

/// Where `hash` goes in open-addressed `table` (needle_rt::tok_slot, then linear probing).
template <typename T, typename Empty> uint32_t freeSlot(const std::vector<T> &table, uint32_t hash, Empty empty) {
  const uint32_t slots = static_cast<uint32_t>(table.size());
  uint32_t slot = needle_rt::tok_slot(hash, slots);
  while (!empty(table[slot]))
    slot = needle_rt::tok_next_slot(slot, slots);
  return slot;
}

/// Every id's bytes, one after the other, with offsets.
void concatenate(const std::vector<std::string> &tokens, std::vector<uint8_t> &blob, std::vector<uint32_t> &offsets) {
  for (const std::string &token : tokens) {
    offsets.push_back(static_cast<uint32_t>(blob.size()));
    blob.insert(blob.end(), token.begin(), token.end());
  }
  offsets.push_back(static_cast<uint32_t>(blob.size()));
}

uint32_t ceilDiv(size_t a, size_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

/// a * b + c, which a bound must keep below 2^31 (the runtime's limit on a normalized text).
uint32_t boundTerm(uint64_t a, uint64_t b, uint64_t c, const std::string &source) {
  const uint64_t value = a * b + c; // each below 2^32: no wrap in 64 bits
  if (value > INT32_MAX)
    unsupported(source, "normalizer: steps that can lengthen a text past 2^31 times");
  return static_cast<uint32_t>(value);
}

/// Grows the bound by `factor` (a step that multiplies the length) and `extra` (bytes it adds).
void growBound(TokenizerTables &t, uint32_t factor, uint32_t extra, const std::string &source) {
  t.growth = boundTerm(t.growth, factor, 0, source);
  t.growthExtra = boundTerm(t.growthExtra, factor, extra, source);
}

/// The same for a Replace, or a step that puts text before.
void growBound(TokenizerTables &t, const TokenizerTables::Normalize &step, const std::string &source) {
  if (step.kind != needle_rt::tok_step_replace)
    return growBound(t, 1, static_cast<uint32_t>(step.to.size()), source);
  growBound(t, std::max<uint32_t>(1, ceilDiv(step.to.size(), step.from.size())), 0, source);
}

/// An NFC or NFKC step's tables; `growth` and `pointsPerByte` get the most bytes and code points
/// a byte of text becomes.
TokenizerTables::Unicode unicodeTables(NormalForm form, uint32_t &growth, uint32_t &pointsPerByte) {
  using needle_rt::tok_class_shift;
  const NormalizationData &data = normalizationData(form);
  const auto withClass = [](char32_t c) { return uint32_t(combiningClass(c)) << tok_class_shift | uint32_t(c); };
  TokenizerTables::Unicode u;
  u.quickBelow = data.quickBelow;
  growth = 3, pointsPerByte = 1; // a Hangul syllable's 3 bytes become 3 jamo of 3; a byte, itself
  for (const auto &[c, mapping] : data.decompositions) {
    u.decomposed.push_back(c);
    u.decompositions.push_back(static_cast<uint32_t>(u.points.size() << 8 | mapping.size()));
    std::string bytes;
    for (char32_t m : mapping) {
      u.points.push_back(withClass(m));
      appendUtf8(bytes, m);
    }
    growth = std::max(growth, ceilDiv(bytes.size(), utf8Length(c)));
    pointsPerByte = std::max(pointsPerByte, ceilDiv(mapping.size(), utf8Length(c)));
  }
  for (const auto &[start, cls] : data.classRuns) {
    u.classStarts.push_back(start);
    u.classValues.push_back(cls);
  }
  for (const NormalizationData::Composition &c : data.compositions) {
    // The text's bound counts decomposed bytes: composing must never lengthen it.
    if (utf8Length(c.composite) > utf8Length(c.first) + utf8Length(c.second))
      fail("internal: U+{:04X} is longer than its composition", static_cast<uint32_t>(c.composite));
    u.composePairs.push_back(uint64_t(c.first) << 21 | c.second);
    u.composites.push_back(withClass(c.composite));
  }
  return u;
}

/// What the first pre-tokenizer step does to a whole text between added tokens, as normalizer
/// steps: ByteLevel's add_prefix_space (checkByteLevel: only when ByteLevel comes first), or a
/// Metaspace's spaces replaced and its replacement put before by its prepend scheme.
std::vector<TokenizerTables::Normalize> preTokenizerSteps(const TokenizerSpec &spec) {
  if (spec.preTokenizer.empty())
    return {};
  const PreTokenizerStep &first = spec.preTokenizer[0];
  if (first.kind == PreTokenizerStep::Kind::ByteLevel && first.addPrefixSpace)
    return {{needle_rt::tok_step_prefix, "", " ", {}}};
  if (first.kind != PreTokenizerStep::Kind::Metaspace)
    return {};
  std::vector<TokenizerTables::Normalize> steps = {{needle_rt::tok_step_replace, " ", first.replacement, {}}};
  if (first.prependScheme != "never")
    steps.push_back({first.prependScheme == "first" ? needle_rt::tok_step_prefix_first : needle_rt::tok_step_prefix,
                     "",
                     first.replacement,
                     {}});
  return steps;
}

/// The normalizer's steps (the file's, then preTokenizerSteps) and the bound of the text they make.
void fillNormalizer(TokenizerTables &t, const TokenizerSpec &spec, const std::string &source) {
  for (const NormalizerStep &step : spec.normalizer) {
    if (step.kind == NormalizerStep::Kind::Prepend) {
      t.normalizer.push_back({needle_rt::tok_step_prepend, "", step.text, {}});
    } else if (step.kind == NormalizerStep::Kind::Replace) {
      t.normalizer.push_back({needle_rt::tok_step_replace, step.text, step.replacement, {}});
    } else {
      uint32_t factor = 1, points = 0;
      const NormalForm form = step.kind == NormalizerStep::Kind::Nfc ? NormalForm::Nfc : NormalForm::Nfkc;
      t.normalizer.push_back({needle_rt::tok_step_unicode, "", "", unicodeTables(form, factor, points)});
      // Its input is at most the bound so far, each byte at most `points` code points.
      t.pointsGrowth = std::max(t.pointsGrowth, boundTerm(points, t.growth, 0, source));
      t.pointsExtra = std::max(t.pointsExtra, boundTerm(points, t.growthExtra, 0, source));
      growBound(t, factor, 0, source);
      continue;
    }
    growBound(t, t.normalizer.back(), source);
  }
  for (const TokenizerTables::Normalize &step : preTokenizerSteps(spec)) {
    t.normalizer.push_back(step);
    growBound(t, step, source);
    ++t.preSteps;
  }
}

void fillMerges(TokenizerTables &t, const BpeModel &model, const std::string &source) {
  if (model.vocab.size() > (size_t(1) << needle_rt::tok_max_id_bits)) // the reader's limit too
    unsupported(source,
                fmt::format("model.vocab: {} ids (2^{} at most)", model.vocab.size(), needle_rt::tok_max_id_bits));
  if (model.merges.size() >= (size_t(1) << needle_rt::tok_max_rank_bits))
    unsupported(source, fmt::format("model.merges: {} merges (2^{} at most)", model.merges.size(),
                                    needle_rt::tok_max_rank_bits));
  // Three quarters full: a probe reads 8 bytes, so the runs a miss scans stay in a line or two,
  // and Llama 3's 280,147 merges take 373,530 slots (3 MB).
  t.merges.assign(slotsFor(model.merges.size(), 0.75), needle_rt::tok_no_merge);
  for (size_t rank = 0; rank < model.merges.size(); ++rank) {
    const auto [left, right] = model.merges[rank];
    t.merges[freeSlot(t.merges, needle_rt::tok_hash_pair(left, right), [](needle_rt::TokMerge m) {
      return m == needle_rt::tok_no_merge;
    })] = needle_rt::tok_merge_key(left, right) | rank;
  }
  // A vocabulary in merge order (GPT-2's, GPT-4's, Qwen's, trained ones) needs no merged ids.
  t.mergedIds = model.mergedIds;
  t.mergedBase = t.mergedIds.empty() ? 0 : t.mergedIds[0];
  bool implied = true;
  for (size_t rank = 0; rank < t.mergedIds.size() && implied; ++rank)
    implied = t.mergedIds[rank] == t.mergedBase + static_cast<int32_t>(rank);
  if (implied)
    t.mergedIds.clear();
}

/// The vocabulary's tokens by spelling (those `keep` accepts), in id order so the tables are
/// the same every time.
template <typename Keep> void fillWords(TokenizerTables &t, const BpeModel &model, Keep keep) {
  size_t kept = 0;
  for (size_t id = 0; id < model.vocab.size(); ++id)
    kept += !model.vocab[id].empty() && keep(id);
  t.words.assign(slotsFor(kept, 0.75), needle_rt::tok_no_word);
  for (size_t id = 0; id < model.vocab.size(); ++id) {
    if (model.vocab[id].empty() || !keep(id))
      continue;
    const uint32_t begin = t.spellingOffsets[id], size = t.spellingOffsets[id + 1] - begin;
    const uint32_t hash = needle_rt::tok_hash_bytes(t.spelling.data() + begin, size);
    t.words[freeSlot(t.words, hash, [](needle_rt::TokWord w) { return w == needle_rt::tok_no_word; })] =
        needle_rt::tok_word(static_cast<int32_t>(id), hash);
  }
}

/// Which byte-level tokens BPE makes from their own bytes: a piece with those bytes is that
/// token without BPE, as BPE on the same bytes gives the same (docs/tokenizer.md, "Whole
/// pieces"). Decided by the runtime's own BPE on the tables so far (merges, byte ids); by
/// vocabulary id (added tokens are never whole pieces: they are matched before BPE).
std::vector<bool> selfMerging(TokenizerTables &t, const BpeModel &model) {
  const needle_rt::TokTables view = t.view();
  std::vector<bool> self(model.vocab.size());
  std::vector<uint8_t> scratch;
  for (size_t id = 0; id < self.size(); ++id) {
    const uint32_t begin = t.tokenOffsets[id], size = t.tokenOffsets[id + 1] - begin;
    if (size < 2)
      continue; // a byte's token (or none): nothing to merge
    scratch.resize(size * needle_rt::kTokScratchPerByte);
    int32_t ids[2];
    needle_rt::TokOutput out{ids, 2, 0};
    needle_rt::tok_bpe(view, t.blob.data() + begin, size, scratch.data(), &out);
    self[id] = out.count == 1 && ids[0] == static_cast<int32_t>(id);
  }
  return self;
}

/// A set of added tokens, each matching its text, by first byte, longest first.
TokenizerTables::Added addedSet(std::vector<std::pair<std::string, const AddedToken *>> tokens) {
  const auto first = [](const std::string &text) { return static_cast<unsigned char>(text[0]); };
  std::stable_sort(tokens.begin(), tokens.end(), [&](const auto &a, const auto &b) {
    return first(a.first) != first(b.first) ? first(a.first) < first(b.first) : a.first.size() > b.first.size();
  });
  TokenizerTables::Added set;
  for (const auto &[text, token] : tokens) {
    set.ids.push_back(token->id);
    set.rules.push_back(static_cast<uint8_t>(
        (token->special ? needle_rt::tok_added_special : 0) | (token->lstrip ? needle_rt::tok_added_lstrip : 0) |
        (token->rstrip ? needle_rt::tok_added_rstrip : 0) | (token->singleWord ? needle_rt::tok_added_single_word : 0) |
        (token->normalized ? needle_rt::tok_added_normalized : 0)));
    set.text.insert(set.text.end(), text.begin(), text.end());
    set.textOffsets.push_back(static_cast<uint32_t>(set.text.size()));
    ++set.first[first(text) + 1];
  }
  for (size_t b = 1; b < set.first.size(); ++b)
    set.first[b] += set.first[b - 1];
  return set;
}

/// The added tokens: all by content (the runtime skips the normalized ones in the text), the
/// normalized ones by their content through the file's normalizer, as the Rust crate matches
/// them; and \w's runs when a token is single_word.
void fillAdded(TokenizerTables &t, const TokenizerSpec &spec, const std::string &source) {
  std::vector<std::pair<std::string, const AddedToken *>> all, normalized;
  for (const AddedToken &token : spec.added) {
    all.push_back({token.content, &token});
    if (token.normalized)
      normalized.push_back({applyNormalizer(spec.normalizer, token.content), &token});
  }
  for (const auto &[text, token] : normalized)
    if (text.empty())
      fail("{}: added token \"{}\" is empty once normalized", source, token->content);
  t.added = addedSet(all);
  t.addedNormalized = addedSet(normalized);
  if (std::none_of(spec.added.begin(), spec.added.end(), [](const AddedToken &a) { return a.singleWord; }))
    return;
  t.wordStarts = {0}; // runs alternate from a not-word one at 0 (U+0000 is no word character)
  for (char32_t c = 0; c < kInvalidByte; ++c)
    if (isWordCharacter(c) != (t.wordStarts.size() % 2 == 0))
      t.wordStarts.push_back(static_cast<uint32_t>(c));
}
/// Lays out an image: the header's room first, then each array at its elements' alignment (4 at least),
/// once: an array with the bytes of one already written shares it (a byte-level vocabulary's
/// spellings are its token bytes).
using ImageWriter = needle::ImageWriter<needle_rt::TokImage>;

/// Offsets as needle_rt::TokOffsets: the largest block (2^shift entries, up to 2^8) whose
/// entries all lie within 65,535 bytes of its first.
struct SteppedOffsets {
  std::vector<uint32_t> bases;
  std::vector<uint16_t> steps;
  uint32_t shift = 0;
};
SteppedOffsets stepped(const std::vector<uint32_t> &offsets) {
  for (uint32_t shift = 8;; --shift) {
    SteppedOffsets out{{}, {}, shift};
    bool fits = true;
    for (size_t i = 0; i < offsets.size() && fits; ++i) {
      if (i % (size_t(1) << shift) == 0)
        out.bases.push_back(offsets[i]);
      const uint32_t step = offsets[i] - out.bases.back();
      fits = step <= UINT16_MAX;
      out.steps.push_back(static_cast<uint16_t>(step));
    }
    if (fits) // shift 0 always fits: every step is 0
      return out;
  }
}

/// Writes a set of added tokens' arrays and its record; returns the record's offset.
uint32_t addedImage(ImageWriter &out, const TokenizerTables::Added &a) {
  const needle_rt::TokImageAdded record{out.array(a.first),       out.array(a.ids),
                                        out.array(a.rules),       out.array(a.text),
                                        out.array(a.textOffsets), static_cast<uint32_t>(a.ids.size())};
  return out.array(std::array{record});
}

/// Writes a Unicode step's arrays and its record; returns the record's offset.
uint32_t unicodeImage(ImageWriter &out, const TokenizerTables::Unicode &u) {
  const needle_rt::TokImageUnicode record{u.quickBelow,
                                          out.array(u.decomposed),
                                          out.array(u.decompositions),
                                          out.array(u.points),
                                          static_cast<uint32_t>(u.decomposed.size()),
                                          out.array(u.classStarts),
                                          out.array(u.classValues),
                                          static_cast<uint32_t>(u.classStarts.size()),
                                          out.array(u.composePairs),
                                          out.array(u.composites),
                                          static_cast<uint32_t>(u.composePairs.size())};
  return out.array(std::array{record});
}

} // namespace

std::vector<uint8_t> TokenizerTables::image() const {
  ImageWriter out("the tokenizer's tables");
  needle_rt::TokImage h{};
  h.ids = ids;
  h.byte_level = byteLevel;
  std::vector<needle_rt::TokImageNormalize> steps;
  for (const Normalize &n : normalizer)
    steps.push_back({n.kind, out.array(n.from), static_cast<uint32_t>(n.from.size()), out.array(n.to),
                     static_cast<uint32_t>(n.to.size()),
                     n.kind == needle_rt::tok_step_unicode ? unicodeImage(out, n.unicode) : 0});
  h.normalizer = out.array(steps);
  h.normalizer_steps = static_cast<uint32_t>(steps.size()) - preSteps;
  h.pre_steps = preSteps;
  h.growth = growth;
  h.growth_extra = growthExtra;
  h.points_growth = pointsGrowth;
  h.points_extra = pointsExtra;
  h.blob = out.array(blob);
  const SteppedOffsets tokens = stepped(tokenOffsets);
  h.token_bases = out.array(tokens.bases);
  h.token_steps = out.array(tokens.steps);
  h.token_shift = tokens.shift;
  h.byte_ids = out.array(byteIds);
  std::vector<needle_rt::TokImageSplit> splitImages;
  for (const Split &s : splits)
    splitImages.push_back({out.array(s.runStarts), out.array(s.runSymbols), static_cast<uint32_t>(s.runStarts.size()),
                           out.array(s.asciiSymbols), s.symbols, s.invalidSymbol, s.endSymbol, out.array(s.next),
                           out.array(s.acceptBefore), s.matchesOnly});
  h.splits = out.array(splitImages);
  h.split_count = static_cast<uint32_t>(splitImages.size());
  h.space_level = spaceLevel;
  h.merges = out.array(merges);
  h.merge_slots = static_cast<uint32_t>(merges.size());
  h.merged_ids = mergedIds.empty() ? 0 : out.array(mergedIds);
  h.merged_base = mergedBase;
  h.words = words.empty() ? 0 : out.array(words);
  h.word_slots = static_cast<uint32_t>(words.size());
  // Spellings serve the words' hash only.
  h.spelling = words.empty() ? 0 : out.array(spelling);
  const SteppedOffsets spellings = stepped(spellingOffsets);
  h.spelling_bases = words.empty() ? 0 : out.array(spellings.bases);
  h.spelling_steps = words.empty() ? 0 : out.array(spellings.steps);
  h.spelling_shift = spellings.shift;
  h.whole_pieces = wholePieces;
  h.unk_id = unk;
  h.fuse_unk = fuseUnk;
  h.added = addedImage(out, added);
  h.added_normalized = addedImage(out, addedNormalized);
  h.word_starts = out.array(wordStarts);
  h.word_runs = static_cast<uint32_t>(wordStarts.size());
  h.prefix_ids = out.array(prefixIds);
  h.prefix_count = static_cast<uint32_t>(prefixIds.size());
  h.suffix_ids = out.array(suffixIds);
  h.suffix_count = static_cast<uint32_t>(suffixIds.size());
  h.strip_leading = stripLeading;
  return out.finish(h);
}

needle_rt::TokTables TokenizerTables::view() {
  image_ = image();
  return needle_rt::tok_tables(image_.data());
}

TokenizerTables buildTokenizerTables(const TokenizerSpec &spec, const std::string &source, TableLayout layout) {
  TokenizerTables t;
  t.byteLevel = isByteLevel(spec);
  if (t.byteLevel)
    checkByteLevel(spec, source);
  else
    checkSentencePiece(spec, source);
  t.ids = static_cast<int32_t>(spec.idCount());

  // Bytes in a text (what decoding writes) and spellings (what encoding looks up); a byte-level
  // token's are the same bytes, its alphabet decoded.
  std::vector<std::string> bytes(static_cast<size_t>(t.ids)), spellings(static_cast<size_t>(t.ids));
  for (size_t id = 0; id < spec.model.vocab.size(); ++id) {
    const std::string &token = spec.model.vocab[id];
    bytes[id] = t.byteLevel ? byteLevelBytes(token) : sentencePieceBytes(token, spec.decoder);
    spellings[id] = t.byteLevel ? bytes[id] : token;
  }
  for (const AddedToken &token : spec.added) {
    bytes[token.id] = t.byteLevel ? token.content : sentencePieceBytes(token.content, spec.decoder);
    // Never looked up (the words' hash holds vocabulary tokens): a byte-level added token's
    // spelling is its bytes, so all spellings equal the token bytes and the image keeps one copy.
    if (t.byteLevel && spellings[token.id].empty())
      spellings[token.id] = bytes[token.id];
  }
  concatenate(bytes, t.blob, t.tokenOffsets);
  concatenate(spellings, t.spelling, t.spellingOffsets);

  std::unordered_map<std::string, int32_t> vocab; // a vocabulary token's spelling to its id
  for (size_t id = 0; id < spec.model.vocab.size(); ++id)
    if (!spec.model.vocab[id].empty())
      vocab.emplace(spellings[id], static_cast<int32_t>(id));
  for (int b = 0; b < 256; ++b) {
    const std::string key = t.byteLevel ? std::string(1, static_cast<char>(b)) : fmt::format("<0x{:02X}>", b);
    const auto it = vocab.find(key);
    if (t.byteLevel && it == vocab.end())
      fail("{}: model.vocab: a byte-level vocabulary lacks the token of byte 0x{:02X}", source, b);
    t.byteIds[b] = it != vocab.end() && (t.byteLevel || spec.model.byteFallback) ? it->second : -1;
  }
  if (!t.byteLevel && !spec.model.unk && std::count(t.byteIds.begin(), t.byteIds.end(), -1))
    unsupported(source, "model: byte_fallback without every <0xXX> token and without unk_token");

  fillNormalizer(t, spec, source);
  for (size_t i = 0; i < spec.preTokenizer.size(); ++i) {
    const PreTokenizerStep &step = spec.preTokenizer[i];
    const std::string where = fmt::format("{}: pre_tokenizer step {}", source, i);
    if (step.kind == PreTokenizerStep::Kind::ByteLevel && step.addPrefixSpace && i)
      t.spaceLevel = spaceLevelOf(t, where);
    if (step.kind == PreTokenizerStep::Kind::Split)
      t.splits.push_back(splitTables(step.pattern, step.matchesOnly, where));
    else if (step.kind == PreTokenizerStep::Kind::ByteLevel && step.useRegex)
      t.splits.push_back(splitTables(kByteLevelPattern, false, where));
    else if (step.kind == PreTokenizerStep::Kind::Metaspace && step.split)
      t.splits.push_back(splitTables(metaspaceSplitPattern(step.replacement), false, where));
  }
  fillMerges(t, spec.model, source);
  if (spec.model.ignoreMerges || !t.byteLevel)
    fillWords(t, spec.model, [](size_t) { return true; });
  else if (layout == TableLayout::Fast)
    fillWords(t, spec.model, [self = selfMerging(t, spec.model)](size_t id) { return self[id]; });
  t.wholePieces = spec.model.ignoreMerges || (t.byteLevel && layout == TableLayout::Fast);
  t.unk = spec.model.unk.value_or(-1);
  t.fuseUnk = spec.model.fuseUnk;
  fillAdded(t, spec, source);
  t.prefixIds = spec.prefixIds;
  t.suffixIds = spec.suffixIds;
  for (const DecoderStep &step : spec.decoder)
    if (step.kind == DecoderStep::Kind::Strip)
      t.stripLeading = static_cast<uint32_t>(step.start);
    else if (step.kind == DecoderStep::Kind::Metaspace) // the first token's leading space (docs/tokenizer.md)
      t.stripLeading = 1;
  return t;
}

} // namespace needle::tokenizer
