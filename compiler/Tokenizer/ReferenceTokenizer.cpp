#include "Tokenizer/ReferenceTokenizer.h"

#include "Support/Error.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

/// Byte-level tokens back to text: each character to its byte (one outside the alphabet stays
/// as it is), then lossy UTF-8.
std::string fromByteLevel(const std::string &tokens) {
  std::string bytes;
  for (char32_t c : decodeUtf8(tokens)) {
    if (const int b = byteLevelByte(c); b >= 0)
      bytes += static_cast<char>(b);
    else
      appendUtf8(bytes, c);
  }
  return lossyUtf8(bytes);
}

/// `chain` with each run of consecutive tokens that `take` accepts replaced by `convert` of the
/// concatenation of what `take` returned for them; other tokens stay.
template <typename Take, typename Convert>
std::vector<std::string> convertRuns(const std::vector<std::string> &chain, Take take, Convert convert) {
  std::vector<std::string> out;
  std::string run;
  for (const std::string &token : chain) {
    if (std::optional<std::string> part = take(token)) {
      run += *part;
      continue;
    }
    if (!run.empty())
      out.push_back(convert(run)), run.clear();
    out.push_back(token);
  }
  if (!run.empty())
    out.push_back(convert(run));
  return out;
}

/// One decoder step on the chain of token texts (the format's decode_chain).
std::vector<std::string> decodeStep(const DecoderStep &step, const std::vector<std::string> &chain,
                                    const std::vector<AddedToken> &added) {
  std::vector<std::string> out;
  auto isAdded = [&](const std::string &token) {
    return std::any_of(added.begin(), added.end(), [&](const AddedToken &a) { return a.content == token; });
  };
  switch (step.kind) {
  case DecoderStep::Kind::ByteLevel: // added tokens stay as they are
    return convertRuns(
        chain, [&](const std::string &token) { return isAdded(token) ? std::nullopt : std::optional(token); },
        fromByteLevel);
  case DecoderStep::Kind::Replace:
    for (std::string token : chain) {
      for (size_t at = token.find(step.text); at != std::string::npos && !step.text.empty();
           at = token.find(step.text, at + step.replacement.size()))
        token.replace(at, step.text.size(), step.replacement);
      out.push_back(std::move(token));
    }
    return out;
  case DecoderStep::Kind::ByteFallback: // runs of byte tokens become lossy UTF-8 text
    return convertRuns(
        chain,
        [](const std::string &token) {
          const int b = fallbackByte(token);
          return b < 0 ? std::nullopt : std::optional(std::string(1, static_cast<char>(b)));
        },
        [](const std::string &bytes) { return lossyUtf8(bytes); });
  case DecoderStep::Kind::Fuse: {
    std::string all;
    for (const std::string &token : chain)
      all += token;
    return {all};
  }
  case DecoderStep::Kind::Strip: // up to start (stop) leading (trailing) characters equal to the content
    for (const std::string &token : chain) {
      const std::vector<char32_t> points = decodeUtf8(token);
      const std::vector<char32_t> content = decodeUtf8(step.text);
      size_t begin = 0, end = points.size();
      while (content.size() == 1 && begin < static_cast<size_t>(step.start) && begin < end &&
             points[begin] == content[0])
        ++begin;
      while (content.size() == 1 && points.size() - end < static_cast<size_t>(step.stop) && end > begin &&
             points[end - 1] == content[0])
        --end;
      out.push_back(encodeUtf8(points, begin, end));
    }
    return out;
  case DecoderStep::Kind::Metaspace: // the oracle's rule: the first token loses a leading space
    for (std::string token : chain) {
      for (size_t at = token.find(step.replacement); at != std::string::npos; at = token.find(step.replacement, at + 1))
        token.replace(at, step.replacement.size(), " ");
      if (out.empty() && token.starts_with(' '))
        token.erase(0, 1);
      out.push_back(std::move(token));
    }
    return out;
  }
  fail("internal: a decoder step the reference tokenizer does not know");
}

/// The code point that ends text[0, at) (an invalid byte as decodeUtf8 has it), or none at 0.
std::optional<char32_t> pointBefore(std::string_view text, size_t at) {
  const size_t from = at < 4 ? 0 : at - 4; // a sequence's lead is within its 4 bytes
  return at == 0 ? std::nullopt : std::optional(decodeUtf8(text.substr(from, at - from)).back());
}

/// The code point at text[at], or none at the end.
std::optional<char32_t> pointAt(std::string_view text, size_t at) {
  return at == text.size() ? std::nullopt : std::optional(decodeUtf8(text.substr(at, 4)).front());
}

/// A text split at added tokens, as the Rust crate's find_matches: the longest token at the
/// leftmost position, matches not overlapping; a single_word match with a word character
/// (regex \w) next to it is dropped (its text stays text); lstrip takes the white space before it
/// (not before the previous match), rstrip the white space after.
std::vector<ReferenceTokenizer::Split>
splitByAdded(std::string_view text, const std::vector<std::pair<std::string, const AddedToken *>> &tokens) {
  std::vector<ReferenceTokenizer::Split> splits;
  size_t done = 0; // where the previous match ended
  for (size_t at = 0; at < text.size();) {
    const std::pair<std::string, const AddedToken *> *best = nullptr;
    for (const auto &token : tokens)
      if (text.substr(at, token.first.size()) == token.first && (!best || token.first.size() > best->first.size()))
        best = &token;
    if (!best) {
      ++at;
      continue;
    }
    const AddedToken &token = *best->second;
    size_t start = at, stop = at + best->first.size();
    at = stop;
    const std::optional<char32_t> before = pointBefore(text, start), after = pointAt(text, stop);
    if (token.singleWord && ((before && isWordCharacter(*before)) || (after && isWordCharacter(*after))))
      continue;
    for (std::optional<char32_t> c; token.lstrip && start > done && (c = pointBefore(text, start)) && isWhiteSpace(*c);)
      start -= utf8Length(*c);
    for (std::optional<char32_t> c; token.rstrip && (c = pointAt(text, stop)) && isWhiteSpace(*c);)
      stop += utf8Length(*c);
    start = std::max(start, done);
    if (done < start)
      splits.push_back({text.substr(done, start - done), done, -1});
    splits.push_back({text.substr(start, stop - start), start, token.id});
    done = at = stop;
  }
  if (done < text.size())
    splits.push_back({text.substr(done), done, -1});
  return splits;
}

} // namespace

std::string applyNormalizer(const std::vector<NormalizerStep> &steps, std::string text) {
  for (const NormalizerStep &step : steps) {
    switch (step.kind) {
    case NormalizerStep::Kind::Nfc:
      text = normalizeText(text, NormalForm::Nfc);
      break;
    case NormalizerStep::Kind::Nfkc:
      text = normalizeText(text, NormalForm::Nfkc);
      break;
    case NormalizerStep::Kind::Prepend:
      if (!text.empty())
        text = step.text + text;
      break;
    case NormalizerStep::Kind::Replace: {
      std::string out;
      for (size_t at = 0;;) {
        const size_t found = text.find(step.text, at);
        out += text.substr(at, found - at);
        if (found == std::string::npos)
          break;
        out += step.replacement;
        at = found + step.text.size();
      }
      text = std::move(out);
      break;
    }
    }
  }
  return text;
}

ReferenceTokenizer::ReferenceTokenizer(TokenizerSpec spec, std::string source) : spec_(std::move(spec)) {
  auto unsupported = [&](std::string_view what) {
    fail("{}: {} is not supported by needlec's tokenizer yet (docs/tokenizer.md)", source, what);
  };
  for (size_t i = 0; i < spec_.preTokenizer.size(); ++i) {
    const PreTokenizerStep &step = spec_.preTokenizer[i];
    const std::string where = fmt::format("{}: pre_tokenizer step {}", source, i);
    switch (step.kind) {
    case PreTokenizerStep::Kind::Split:
      stages_.push_back({"", "", false, Regex(step.pattern, where), step.matchesOnly});
      break;
    case PreTokenizerStep::Kind::ByteLevel: // its bytes are spelled in the alphabet by encodeSegment
      stages_.push_back({"", step.addPrefixSpace ? " " : "", false,
                         step.useRegex ? std::optional(Regex(kByteLevelPattern, where)) : std::nullopt, false});
      byteLevel_ = true;
      break;
    case PreTokenizerStep::Kind::Metaspace: // "first": the piece at offset 0, the first piece of the first text
      if (i > 0)
        unsupported("the Metaspace pre-tokenizer after another step");
      stages_.push_back(
          {step.replacement, step.prependScheme == "never" ? "" : step.replacement, step.prependScheme == "first",
           step.split ? std::optional(Regex(metaspaceSplitPattern(step.replacement), where)) : std::nullopt, false});
    }
  }
  for (const AddedToken &token : spec_.added) {
    if (token.normalized)
      normalizedAdded_.push_back({applyNormalizer(spec_.normalizer, token.content), &token});
    else
      rawAdded_.push_back({token.content, &token});
  }
  if (spec_.decoder.empty())
    unsupported("a tokenizer without a decoder");
  tokens_ = spec_.model.vocab;
  tokens_.resize(static_cast<size_t>(spec_.idCount()));
  for (const AddedToken &token : spec_.added)
    tokens_[token.id] = token.content;
  for (size_t id = 0; id < spec_.model.vocab.size(); ++id)
    if (!spec_.model.vocab[id].empty())
      ids_.emplace(spec_.model.vocab[id], static_cast<int32_t>(id));
  for (size_t rank = 0; rank < spec_.model.merges.size(); ++rank)
    merges_.emplace(spec_.model.merges[rank], std::pair{static_cast<int32_t>(rank), spec_.model.mergedIds[rank]});
  if (byteLevel_)
    for (char32_t c : byteLevelAlphabet()) {
      std::string symbol;
      appendUtf8(symbol, c);
      if (!ids_.count(symbol))
        fail("{}: model.vocab: a byte-level vocabulary lacks the byte token \"{}\"", source, symbol);
    }
}

std::vector<int32_t> ReferenceTokenizer::encode(std::string_view text, bool addSpecial) const {
  std::vector<int32_t> ids;
  if (addSpecial)
    ids = spec_.prefixIds;
  for (const Split &split : splitByAdded(text, rawAdded_))
    split.id >= 0 ? ids.push_back(split.id) : encodeSegment(split.text, split.offset == 0, ids);
  if (addSpecial)
    ids.insert(ids.end(), spec_.suffixIds.begin(), spec_.suffixIds.end());
  return ids;
}

void ReferenceTokenizer::encodeSegment(std::string_view text, bool atStart, std::vector<int32_t> &ids) const {
  if (text.empty())
    return;
  const std::string normalized = applyNormalizer(spec_.normalizer, std::string(text));
  for (const Split &split : splitByAdded(normalized, normalizedAdded_))
    split.id >= 0 ? ids.push_back(split.id) : encodePiece(std::string(split.text), atStart && split.offset == 0, ids);
}

void ReferenceTokenizer::encodePiece(std::string piece, bool atStart, std::vector<int32_t> &ids) const {
  std::vector<std::string> pieces = {std::move(piece)};
  for (const PreTokenizerStage &stage : stages_) {
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string &piece = pieces[i];
      if (!stage.replaceSpaces.empty())
        for (size_t at = piece.find(' '); at != std::string::npos;
             at = piece.find(' ', at + stage.replaceSpaces.size()))
          piece.replace(at, 1, stage.replaceSpaces);
      // As the Rust crate's prepend, never to an empty piece.
      if (!stage.prefix.empty() && !piece.empty() && !piece.starts_with(stage.prefix) &&
          (!stage.prefixAtStartOnly || (atStart && i == 0)))
        piece.insert(0, stage.prefix);
    }
    if (!stage.split)
      continue;
    std::vector<std::string> next;
    for (const std::string &piece : pieces) {
      const std::vector<char32_t> points = decodeUtf8(piece);
      for (const auto &[begin, end] : stage.split->splitIsolated(points))
        if (!stage.matchesOnly || stage.split->matchAt(points, begin) != begin) // a gap starts where no match does
          next.push_back(encodeUtf8(points, begin, end));
    }
    pieces = std::move(next);
  }
  for (const std::string &piece : pieces) {
    if (!byteLevel_) {
      encodeWord(piece, ids);
      continue;
    }
    std::string word;
    for (unsigned char b : piece)
      appendUtf8(word, byteLevelAlphabet()[b]);
    encodeWord(word, ids);
  }
}

void ReferenceTokenizer::encodeWord(std::string_view word, std::vector<int32_t> &ids) const {
  const BpeModel &model = spec_.model;
  if (model.ignoreMerges)
    if (auto it = ids_.find(std::string(word)); it != ids_.end()) {
      ids.push_back(it->second);
      return;
    }
  // One symbol per character; a character outside the vocabulary becomes its bytes' <0xXX>
  // tokens (byte_fallback, when the vocabulary has all of them: Gemma's has no <0x09>, its tab
  // being a token) or the unknown token (consecutive ones fused with fuse_unk).
  std::vector<int32_t> symbols;
  const std::vector<char32_t> points = decodeUtf8(word);
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string character = encodeUtf8(points, i, i + 1);
    std::vector<int32_t> fallback;
    for (unsigned char b : model.byteFallback ? character : std::string())
      if (auto it = ids_.find(fmt::format("<0x{:02X}>", b)); it != ids_.end())
        fallback.push_back(it->second);
    if (auto it = ids_.find(character); it != ids_.end()) {
      symbols.push_back(it->second);
    } else if (!fallback.empty() && fallback.size() == character.size()) {
      symbols.insert(symbols.end(), fallback.begin(), fallback.end());
    } else if (model.unk) {
      if (!(model.fuseUnk && !symbols.empty() && symbols.back() == *model.unk))
        symbols.push_back(*model.unk);
    } else {
      fail("a character is in no token, and the tokenizer has neither byte_fallback nor unk_token");
    }
  }
  // Merge the adjacent pair of the lowest rank, the leftmost of equals, until none merges.
  for (;;) {
    size_t best = symbols.size();
    std::pair<int32_t, int32_t> bestMerge{INT32_MAX, -1};
    for (size_t i = 0; i + 1 < symbols.size(); ++i)
      if (auto it = merges_.find({symbols[i], symbols[i + 1]});
          it != merges_.end() && it->second.first < bestMerge.first)
        best = i, bestMerge = it->second;
    if (best == symbols.size())
      break;
    symbols[best] = bestMerge.second;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

std::string ReferenceTokenizer::decode(const std::vector<int32_t> &ids) const {
  std::vector<std::string> chain;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || tokens_[id].empty())
      fail("token id {} is no token of this tokenizer", id);
    chain.push_back(tokens_[id]);
  }
  for (const DecoderStep &step : spec_.decoder)
    chain = decodeStep(step, chain, spec_.added);
  std::string text;
  for (const std::string &piece : chain)
    text += piece;
  return text;
}

} // namespace needle::tokenizer
