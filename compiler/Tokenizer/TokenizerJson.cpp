#include "Tokenizer/TokenizerJson.h"

#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Json.h"
#include "Tokenizer/Regex.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

using json::Value;

/// A JSON value and the path that leads to it, for error messages: "model.merges[3]".
class Node {
public:
  Node(const Value &value, std::string path, std::string_view source)
      : value_(value), path_(std::move(path)), source_(source) {}

  const Value &value() const { return value_; }
  const std::string &path() const { return path_; }
  /// "source: path", as errors begin.
  std::string where() const { return fmt::format("{}: {}", source_, path_); }
  bool isNull() const { return value_.kind == Value::Kind::Null; }

  template <typename... Args> [[noreturn]] void fail(fmt::format_string<Args...> format, Args &&...args) const {
    needle::fail("{}: {}: {}", source_, path_.empty() ? "(top level)" : path_,
                 fmt::format(format, std::forward<Args>(args)...));
  }

  /// The member `key`; a null Value when absent.
  Node member(std::string_view key) const {
    const Value *found = value_.find(key);
    return Node(found ? *found : kNull, path_.empty() ? std::string(key) : path_ + "." + std::string(key), source_);
  }
  Node item(size_t i) const { return Node(value_.items[i], fmt::format("{}[{}]", path_, i), source_); }
  /// A member already found (an object's members in a loop): `member` would search again.
  Node entry(const std::string &key, const Value &value) const {
    return Node(value, path_.empty() ? key : path_ + "." + key, source_);
  }

  void expect(Value::Kind kind) const {
    if (value_.kind != kind)
      fail("expected {}, found {}", Value::kindName(kind), Value::kindName(value_.kind));
  }
  /// Fails on a member not in `known`: a field needlec does not understand may change the tokens.
  void onlyMembers(std::initializer_list<std::string_view> known) const {
    expect(Value::Kind::Object);
    for (const auto &[key, unused] : value_.members)
      if (std::find(known.begin(), known.end(), key) == known.end())
        member(key).fail("unknown field; needlec does not support it");
  }
  std::string string() const {
    expect(Value::Kind::String);
    return value_.string;
  }
  bool boolean(bool absent) const {
    if (isNull())
      return absent;
    expect(Value::Kind::Bool);
    return value_.boolean;
  }
  int64_t integer(int64_t low, int64_t high) const {
    if (value_.kind != Value::Kind::Number || !value_.isInteger)
      fail("expected an integer");
    if (value_.integer < low || value_.integer > high)
      fail("{} is outside {}..{}", value_.integer, low, high);
    return value_.integer;
  }
  std::string type() const { return member("type").string(); }

private:
  static inline const Value kNull{};
  const Value &value_;
  std::string path_;
  std::string_view source_;
};

/// A Replace pattern: {"String": s} (a {"Regex": ...} pattern is not supported there). Its text,
/// like every string the JSON reader gives, is valid UTF-8, so a match ends between characters.
std::string literalPattern(const Node &pattern) {
  pattern.onlyMembers({"String"});
  std::string literal = pattern.member("String").string();
  if (literal.empty()) // it would match everywhere: "replace every empty string" has no sensible reading
    pattern.member("String").fail("an empty pattern is not supported");
  return literal;
}

/// The steps of `node`, flattening Sequence (its steps under `listKey`).
template <typename Read> void readSteps(const Node &node, const char *listKey, Read read) {
  if (node.isNull())
    return;
  if (node.type() == "Sequence") {
    node.onlyMembers({"type", listKey});
    const Node list = node.member(listKey);
    list.expect(Value::Kind::Array);
    for (size_t i = 0; i < list.value().items.size(); ++i)
      readSteps(list.item(i), listKey, read);
    return;
  }
  read(node);
}

void readNormalizer(const Node &node, TokenizerSpec &spec) {
  readSteps(node, "normalizers", [&](const Node &step) {
    const std::string type = step.type();
    if (type == "NFC" || type == "NFKC") {
      step.onlyMembers({"type"});
      spec.normalizer.push_back({type == "NFC" ? NormalizerStep::Kind::Nfc : NormalizerStep::Kind::Nfkc, "", ""});
    } else if (type == "Prepend") {
      step.onlyMembers({"type", "prepend"});
      spec.normalizer.push_back({NormalizerStep::Kind::Prepend, step.member("prepend").string(), ""});
    } else if (type == "Replace") {
      step.onlyMembers({"type", "pattern", "content"});
      spec.normalizer.push_back(
          {NormalizerStep::Kind::Replace, literalPattern(step.member("pattern")), step.member("content").string()});
    } else {
      step.member("type").fail("normalizer \"{}\" is not supported (NFC, NFKC, Prepend, Replace, Sequence)", type);
    }
  });
}

/// A Metaspace step's replacement and prepend scheme (the pre-tokenizer's and the decoder's).
/// Files older than prepend_scheme say add_prefix_space instead: true is "always", false "never".
std::pair<std::string, std::string> readMetaspace(const Node &step) {
  step.onlyMembers({"type", "replacement", "prepend_scheme", "split", "add_prefix_space"});
  const Node scheme = step.member("prepend_scheme");
  const bool prefixSpace = step.member("add_prefix_space").boolean(true);
  std::string prependScheme = scheme.isNull() ? (prefixSpace ? "always" : "never") : scheme.string();
  if (prependScheme != "always" && prependScheme != "first" && prependScheme != "never")
    scheme.fail("\"{}\" is not always, first or never", prependScheme);
  const Node replacement = step.member("replacement");
  if (decodeUtf8(replacement.string()).size() != 1)
    replacement.fail("\"{}\" is not one character", replacement.string());
  return {replacement.string(), std::move(prependScheme)};
}

void readPreTokenizer(const Node &node, TokenizerSpec &spec) {
  readSteps(node, "pretokenizers", [&](const Node &step) {
    const std::string type = step.type();
    if (!spec.preTokenizer.empty() && spec.preTokenizer.back().kind == PreTokenizerStep::Kind::ByteLevel)
      step.fail("a pre-tokenizer step after ByteLevel is not supported (it would see the byte alphabet)");
    PreTokenizerStep out{};
    if (type == "Split") {
      step.onlyMembers({"type", "pattern", "behavior", "invert"});
      const Node pattern = step.member("pattern");
      pattern.onlyMembers({"Regex"});
      out.kind = PreTokenizerStep::Kind::Split;
      out.pattern = pattern.member("Regex").string();
      (void)Regex(out.pattern, pattern.member("Regex").where()); // an unsupported construct fails here, by path
      // Isolated keeps the matches and the text between them; Removed, inverted, only the
      // matches (cl100k-style files). Other combinations no supported file uses.
      const std::string behavior = step.member("behavior").string();
      const bool invert = step.member("invert").boolean(false);
      if (behavior != "Isolated" && behavior != "Removed")
        step.member("behavior").fail("\"{}\" is not supported (Isolated, or Removed with invert)", behavior);
      if (invert != (behavior == "Removed"))
        step.member("invert").fail("{} is not supported with behavior {}", invert, behavior);
      out.matchesOnly = invert;
    } else if (type == "ByteLevel") {
      step.onlyMembers({"type", "add_prefix_space", "trim_offsets", "use_regex"});
      out.kind = PreTokenizerStep::Kind::ByteLevel;
      out.addPrefixSpace = step.member("add_prefix_space").boolean(true);
      out.useRegex = step.member("use_regex").boolean(true);
      (void)step.member("trim_offsets").boolean(true); // offsets only: no effect on the ids
    } else if (type == "Metaspace") {
      out.kind = PreTokenizerStep::Kind::Metaspace;
      std::tie(out.replacement, out.prependScheme) = readMetaspace(step);
      out.split = step.member("split").boolean(true);
    } else {
      step.member("type").fail("pre-tokenizer \"{}\" is not supported (Split, ByteLevel, Metaspace, Sequence)", type);
    }
    spec.preTokenizer.push_back(std::move(out));
  });
}

void readDecoder(const Node &node, TokenizerSpec &spec) {
  readSteps(node, "decoders", [&](const Node &step) {
    const std::string type = step.type();
    DecoderStep out{};
    if (type == "ByteLevel") {
      step.onlyMembers({"type", "add_prefix_space", "trim_offsets", "use_regex"});
      out.kind = DecoderStep::Kind::ByteLevel;
    } else if (type == "Replace") {
      step.onlyMembers({"type", "pattern", "content"});
      out.kind = DecoderStep::Kind::Replace;
      out.text = literalPattern(step.member("pattern"));
      out.replacement = step.member("content").string();
    } else if (type == "ByteFallback" || type == "Fuse") {
      step.onlyMembers({"type"});
      out.kind = type == "Fuse" ? DecoderStep::Kind::Fuse : DecoderStep::Kind::ByteFallback;
    } else if (type == "Strip") {
      step.onlyMembers({"type", "content", "start", "stop"});
      out.kind = DecoderStep::Kind::Strip;
      out.text = step.member("content").string();
      out.start = step.member("start").integer(0, 1 << 20);
      out.stop = step.member("stop").integer(0, 1 << 20);
    } else if (type == "Metaspace") {
      out.kind = DecoderStep::Kind::Metaspace;
      std::tie(out.replacement, out.prependScheme) = readMetaspace(step);
    } else {
      step.member("type").fail("decoder \"{}\" is not supported (ByteLevel, Replace, ByteFallback, Fuse, Strip, "
                               "Metaspace, Sequence)",
                               type);
    }
    spec.decoder.push_back(std::move(out));
  });
}

/// The token ids `name` stands for in a TemplateProcessing's special_tokens.
std::vector<int32_t> specialTokenIds(const Node &specials, const std::string &name) {
  const Node entry = specials.member(name);
  if (entry.isNull())
    specials.fail("\"{}\" is used by the template but not defined here", name);
  entry.onlyMembers({"id", "ids", "tokens"});
  const Node ids = entry.member("ids");
  ids.expect(Value::Kind::Array);
  std::vector<int32_t> out;
  for (size_t i = 0; i < ids.value().items.size(); ++i)
    out.push_back(static_cast<int32_t>(ids.item(i).integer(0, kMaxTokenIds - 1)));
  return out;
}

void readPostProcessor(const Node &node, TokenizerSpec &spec) {
  if (node.isNull())
    return;
  const std::string type = node.type();
  if (type == "ByteLevel") { // offsets only
    node.onlyMembers({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    return;
  }
  if (type != "TemplateProcessing")
    node.member("type").fail("post-processor \"{}\" is not supported (TemplateProcessing, ByteLevel)", type);
  node.onlyMembers({"type", "single", "pair", "special_tokens"});
  const Node single = node.member("single"), specials = node.member("special_tokens");
  single.expect(Value::Kind::Array);
  specials.expect(Value::Kind::Object);
  bool seenSequence = false;
  for (size_t i = 0; i < single.value().items.size(); ++i) {
    const Node piece = single.item(i);
    piece.expect(Value::Kind::Object);
    if (const Node sequence = piece.member("Sequence"); !sequence.isNull()) {
      piece.onlyMembers({"Sequence"});
      if (seenSequence)
        sequence.fail("a template for one sequence holds it once");
      seenSequence = true;
      continue;
    }
    piece.onlyMembers({"SpecialToken"});
    const std::vector<int32_t> ids = specialTokenIds(specials, piece.member("SpecialToken").member("id").string());
    std::vector<int32_t> &side = seenSequence ? spec.suffixIds : spec.prefixIds;
    side.insert(side.end(), ids.begin(), ids.end());
  }
  if (!seenSequence)
    single.fail("the template has no {{\"Sequence\"}}");
}

/// A merge: "a b" (one space) or ["a", "b"].
std::pair<std::string, std::string> mergeParts(const Node &merge) {
  if (merge.value().kind == Value::Kind::Array) {
    if (merge.value().items.size() != 2)
      merge.fail("a merge is a pair of tokens");
    return {merge.item(0).string(), merge.item(1).string()};
  }
  const std::string text = merge.string();
  const size_t space = text.find(' ');
  if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
    merge.fail("\"{}\" is not two tokens separated by one space", text);
  return {text.substr(0, space), text.substr(space + 1)};
}

void readModel(const Node &node, TokenizerSpec &spec) {
  node.expect(Value::Kind::Object);
  if (const std::string type = node.type(); type != "BPE")
    node.member("type").fail("model \"{}\" is not supported (BPE only)", type);
  node.onlyMembers({"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                    "byte_fallback", "ignore_merges", "vocab", "merges"});
  if (!node.member("dropout").isNull())
    node.member("dropout").fail("only null is supported (dropout makes encoding random)");
  for (const char *affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const Node value = node.member(affix); !value.isNull() && !value.string().empty())
      value.fail("only null or \"\" is supported");
  BpeModel &model = spec.model;
  model.byteFallback = node.member("byte_fallback").boolean(false);
  model.fuseUnk = node.member("fuse_unk").boolean(false);
  model.ignoreMerges = node.member("ignore_merges").boolean(false);

  const Node vocab = node.member("vocab");
  vocab.expect(Value::Kind::Object);
  std::unordered_map<std::string, int32_t> ids;
  for (const auto &[token, idValue] : vocab.value().members) {
    const Node entry = vocab.entry(token, idValue);
    const int32_t id = static_cast<int32_t>(entry.integer(0, kMaxTokenIds - 1));
    if (static_cast<size_t>(id) >= model.vocab.size())
      model.vocab.resize(static_cast<size_t>(id) + 1);
    if (token.empty())
      entry.fail("a token is empty");
    if (!model.vocab[id].empty())
      entry.fail("id {} is also \"{}\"'s", id, model.vocab[id]);
    model.vocab[id] = token;
    ids.emplace(token, id);
  }
  if (const Node unk = node.member("unk_token"); !unk.isNull()) {
    auto it = ids.find(unk.string());
    if (it == ids.end())
      unk.fail("\"{}\" is not in the vocabulary", unk.string());
    model.unk = it->second;
  }

  const Node merges = node.member("merges");
  merges.expect(Value::Kind::Array);
  std::set<std::pair<int32_t, int32_t>> seen;
  for (size_t rank = 0; rank < merges.value().items.size(); ++rank) {
    const Node merge = merges.item(rank);
    const auto [left, right] = mergeParts(merge);
    auto idOf = [&](const std::string &token) {
      auto it = ids.find(token);
      if (it == ids.end())
        merge.fail("\"{}\" is not in the vocabulary", token);
      return it->second;
    };
    const std::pair<int32_t, int32_t> pair{idOf(left), idOf(right)};
    if (!seen.insert(pair).second)
      merge.fail("\"{}\" + \"{}\" is merged twice", left, right);
    model.merges.push_back(pair);
    model.mergedIds.push_back(idOf(left + right));
  }
}

void readAddedTokens(const Node &node, TokenizerSpec &spec) {
  if (node.isNull())
    return;
  node.expect(Value::Kind::Array);
  if (node.value().items.size() > kMaxAddedTokens)
    node.fail("{} added tokens, more than the {} needlec takes", node.value().items.size(), kMaxAddedTokens);
  std::set<int32_t> ids;
  for (size_t i = 0; i < node.value().items.size(); ++i) {
    const Node token = node.item(i);
    token.onlyMembers({"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    AddedToken added;
    added.id = static_cast<int32_t>(token.member("id").integer(0, kMaxTokenIds - 1));
    added.content = token.member("content").string();
    if (added.content.empty())
      token.member("content").fail("an added token is not empty");
    if (!ids.insert(added.id).second)
      token.member("id").fail("id {} is added twice", added.id);
    const std::vector<std::string> &vocab = spec.model.vocab;
    if (static_cast<size_t>(added.id) < vocab.size() && !vocab[added.id].empty() && vocab[added.id] != added.content)
      token.member("content").fail("\"{}\" has id {}, which the vocabulary gives \"{}\"", added.content, added.id,
                                   vocab[added.id]);
    added.singleWord = token.member("single_word").boolean(false);
    added.lstrip = token.member("lstrip").boolean(false);
    added.rstrip = token.member("rstrip").boolean(false);
    added.special = token.member("special").boolean(false);
    added.normalized = token.member("normalized").boolean(!added.special); // the oracle's default
    spec.added.push_back(std::move(added));
  }
}

} // namespace

int64_t TokenizerSpec::idCount() const {
  int64_t count = static_cast<int64_t>(model.vocab.size());
  for (const AddedToken &token : added)
    count = std::max<int64_t>(count, int64_t(token.id) + 1);
  return count;
}

std::string metaspaceSplitPattern(const std::string &replacement) {
  std::string code;
  for (char32_t c : decodeUtf8(replacement))
    code += fmt::format("\\x{{{:X}}}", static_cast<uint32_t>(c));
  return fmt::format("{0}[^{0}]*|[^{0}]+", code);
}

int fallbackByte(const std::string &token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>' || !std::isxdigit(token[3]) ||
      !std::isxdigit(token[4]))
    return -1;
  return std::stoi(token.substr(3, 2), nullptr, 16);
}

TokenizerSpec parseTokenizerJson(std::string_view text, std::string_view source) {
  const Value document = json::parse(text, source, kMaxTokenizerJsonValues);
  const Node root(document, "", source);
  root.onlyMembers({"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
                    "decoder", "model"});
  for (const char *unused : {"truncation", "padding"})
    if (!root.member(unused).isNull())
      root.member(unused).fail("only null is supported (the caller decides the length)");
  TokenizerSpec spec;
  readModel(root.member("model"), spec);
  readAddedTokens(root.member("added_tokens"), spec);
  readNormalizer(root.member("normalizer"), spec);
  readPreTokenizer(root.member("pre_tokenizer"), spec);
  readDecoder(root.member("decoder"), spec);
  readPostProcessor(root.member("post_processor"), spec);
  for (const std::vector<int32_t> *ids : {&spec.prefixIds, &spec.suffixIds})
    for (int32_t id : *ids)
      if (id >= spec.idCount())
        root.member("post_processor").fail("token id {} is neither in the vocabulary nor added", id);
  return spec;
}

TokenizerSpec readTokenizerJson(const std::filesystem::path &path) {
  const std::vector<uint8_t> bytes = readFile(path, kMaxTokenizerBytes);
  return parseTokenizerJson(std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()),
                            path.string());
}

namespace {

/// The id of the token a tokenizer_config.json field names, if it names one.
std::optional<int32_t> configTokenId(const Node &node, const TokenizerSpec &spec) {
  if (node.isNull())
    return std::nullopt;
  const std::string text = node.value().kind == Value::Kind::Object ? node.member("content").string() : node.string();
  for (const AddedToken &token : spec.added)
    if (token.content == text)
      return token.id;
  const auto vocab = std::find(spec.model.vocab.begin(), spec.model.vocab.end(), text);
  if (vocab == spec.model.vocab.end())
    node.fail("\"{}\" is no token of the tokenizer", text);
  return static_cast<int32_t>(vocab - spec.model.vocab.begin());
}

} // namespace

TokenizerConfig parseTokenizerConfig(std::string_view text, std::string_view source, const TokenizerSpec &spec) {
  const Value document = json::parse(text, source);
  const Node root(document, "", source);
  root.expect(Value::Kind::Object);
  return {configTokenId(root.member("bos_token"), spec), configTokenId(root.member("eos_token"), spec)};
}

} // namespace needle::tokenizer
