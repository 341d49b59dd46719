// Reading tokenizer.json (compiler/Tokenizer/TokenizerJson.h): what a small byte-level and a
// small SentencePiece-style tokenizer become, and the one-line errors naming the JSON path.
#include "Tokenizer/TokenizerJson.h"

#include "Support/Error.h"

#include <gtest/gtest.h>

#include <string>

namespace needle::tokenizer {
namespace {

/// A byte-level BPE in the shape of Llama 3's and Qwen's, with `model`, `added` and
/// `post` substituted.
std::string byteLevel(const std::string &model, const std::string &added = "[]",
                      const std::string &post = R"({"type": "ByteLevel"})") {
  return R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": )" + added +
         R"(, "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
  "post_processor": )" +
         post + R"(, "decoder": {"type": "ByteLevel"}, "model": )" + model + "}";
}

const std::string kModel =
    R"({"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
        "ignore_merges": true, "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
        "merges": ["a b", ["Ġ", "ab"]]})";

std::string errorOf(const std::string &text) {
  try {
    parseTokenizerJson(text, "tok.json");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerJson, ReadsAByteLevelBpe) {
  const TokenizerSpec spec =
      parseTokenizerJson(byteLevel(kModel, R"([{"id": 5, "content": "<|end|>", "single_word": false, "lstrip": false,
                            "rstrip": false, "normalized": false, "special": true}])"),
                         "tok.json");
  EXPECT_EQ(spec.model.vocab, (std::vector<std::string>{"a", "b", "ab", "Ġ", "Ġab"}));
  ASSERT_EQ(spec.model.merges.size(), 2u);
  EXPECT_EQ(spec.model.merges[1], (std::pair<int32_t, int32_t>{3, 2}));
  EXPECT_EQ(spec.model.mergedIds, (std::vector<int32_t>{2, 4}));
  EXPECT_TRUE(spec.model.ignoreMerges);
  ASSERT_EQ(spec.added.size(), 1u);
  EXPECT_TRUE(spec.added[0].special);
  EXPECT_EQ(spec.idCount(), 6);
  ASSERT_EQ(spec.normalizer.size(), 1u);
  EXPECT_EQ(spec.normalizer[0].kind, NormalizerStep::Kind::Nfc);
  ASSERT_EQ(spec.preTokenizer.size(), 2u);
  EXPECT_EQ(spec.preTokenizer[0].pattern, R"(\p{L}+|\s+)");
  EXPECT_FALSE(spec.preTokenizer[1].useRegex);
  EXPECT_TRUE(spec.prefixIds.empty());
}

TEST(TokenizerJson, ReadsASentencePieceStyleBpeAndItsTemplate) {
  const std::string text = R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true,
              "vocab": {"<s>": 0, "<unk>": 1, "<0x41>": 2, "▁": 3, "a": 4, "▁a": 5}, "merges": ["▁ a"]}})";
  const TokenizerSpec spec = parseTokenizerJson(text, "tok.json");
  EXPECT_EQ(spec.model.unk, 1);
  EXPECT_TRUE(spec.model.byteFallback);
  ASSERT_EQ(spec.normalizer.size(), 2u);
  EXPECT_EQ(spec.normalizer[1].replacement, "▁");
  ASSERT_EQ(spec.decoder.size(), 4u);
  EXPECT_EQ(spec.decoder[3].start, 1);
  EXPECT_EQ(spec.prefixIds, (std::vector<int32_t>{0}));
  EXPECT_TRUE(spec.suffixIds.empty());
}

/// A SentencePiece-style BPE whose pre-tokenizer and decoder are the Metaspace steps given.
std::string metaspace(const std::string &preTokenizer, const std::string &decoder) {
  return R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [], "normalizer": null,
    "pre_tokenizer": )" +
         preTokenizer + R"(, "post_processor": null, "decoder": )" + decoder + R"(,
    "model": {"type": "BPE", "byte_fallback": false, "vocab": {"▁": 0, "a": 1, "▁a": 2}, "merges": ["▁ a"]}})";
}

TEST(TokenizerJson, MetaspaceReadsItsSchemeOrTheOlderAddPrefixSpace) {
  const TokenizerSpec spec =
      parseTokenizerJson(metaspace(R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})",
                                   R"({"type": "Metaspace", "replacement": "▁", "add_prefix_space": false})"),
                         "tok.json");
  ASSERT_EQ(spec.preTokenizer.size(), 1u);
  EXPECT_EQ(spec.preTokenizer[0].replacement, "▁");
  EXPECT_EQ(spec.preTokenizer[0].prependScheme, "first");
  EXPECT_TRUE(spec.preTokenizer[0].split);
  ASSERT_EQ(spec.decoder.size(), 1u);
  EXPECT_EQ(spec.decoder[0].prependScheme, "never");
  const TokenizerSpec older = parseTokenizerJson(
      metaspace(R"({"type": "Metaspace", "replacement": "▁", "add_prefix_space": true, "split": false})", "null"),
      "tok.json");
  EXPECT_EQ(older.preTokenizer[0].prependScheme, "always");
  EXPECT_FALSE(older.preTokenizer[0].split);
  EXPECT_EQ(errorOf(metaspace("null", R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "twice"})")),
            "tok.json: decoder.prepend_scheme: \"twice\" is not always, first or never");
  EXPECT_EQ(
      errorOf(metaspace(R"({"type": "Metaspace", "replacement": "▁▁", "prepend_scheme": "first"})", "null")),
      R"(tok.json: pre_tokenizer.replacement: "\xe2\x96\x81\xe2\x96\x81" is not one character)"); // one line, escaped
}

TEST(TokenizerJson, UnsupportedPartsAreNamedByTheirJsonPath) {
  EXPECT_EQ(errorOf(byteLevel(R"({"type": "WordPiece", "vocab": {}})")),
            "tok.json: model.type: model \"WordPiece\" is not supported (BPE only)");
  std::string nfd = byteLevel(kModel);
  nfd.replace(nfd.find(R"("type": "NFC")"), 13, R"("type": "NFD")");
  EXPECT_EQ(errorOf(nfd),
            "tok.json: normalizer.type: normalizer \"NFD\" is not supported (NFC, NFKC, Prepend, Replace, Sequence)");
  std::string merged = byteLevel(kModel);
  merged.replace(merged.find(R"("Isolated")"), 10, R"("MergedWithPrevious")");
  EXPECT_EQ(errorOf(merged), "tok.json: pre_tokenizer.pretokenizers[0].behavior: \"MergedWithPrevious\" is not "
                             "supported (Isolated, or Removed with invert)");
  std::string inverted = byteLevel(kModel);
  inverted.replace(inverted.find(R"("invert": false)"), 15, R"("invert": true)");
  EXPECT_EQ(errorOf(inverted),
            "tok.json: pre_tokenizer.pretokenizers[0].invert: true is not supported with behavior Isolated");
  std::string removed = byteLevel(kModel);
  removed.replace(removed.find(R"("Isolated")"), 10, R"("Removed")");
  EXPECT_EQ(errorOf(removed),
            "tok.json: pre_tokenizer.pretokenizers[0].invert: false is not supported with behavior Removed");
  std::string late = byteLevel(kModel);
  late.replace(late.find(R"("use_regex": false})"), 19,
               R"("use_regex": false}, {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated"})");
  EXPECT_EQ(errorOf(late), "tok.json: pre_tokenizer.pretokenizers[2]: a pre-tokenizer step after ByteLevel is not "
                           "supported (it would see the byte alphabet)");
  std::string digits = byteLevel(kModel);
  digits.replace(digits.find(R"(\\p{L}+|)"), 8, R"(\\d+|)");
  EXPECT_EQ(errorOf(digits), "tok.json: pre_tokenizer.pretokenizers[0].pattern.Regex: regex \"\\d+|\\s+\": at offset "
                             "2: the escape \\d is not supported");
  std::string empty = byteLevel(kModel);
  empty.replace(empty.find(R"({"type": "NFC"})"), 15,
                R"({"type": "Replace", "pattern": {"String": ""}, "content": "x"})");
  EXPECT_EQ(errorOf(empty), "tok.json: normalizer.pattern.String: an empty pattern is not supported");
  EXPECT_EQ(errorOf(byteLevel(kModel, "[]", R"({"type": "RobertaProcessing"})")),
            "tok.json: post_processor.type: post-processor \"RobertaProcessing\" is not supported (TemplateProcessing, "
            "ByteLevel)");
  std::string extra = byteLevel(kModel);
  extra.replace(extra.find(R"("dropout": null)"), 15, R"("dropout": null, "cache_capacity": 10)");
  EXPECT_EQ(errorOf(extra), "tok.json: model.cache_capacity: unknown field; needlec does not support it");
}

TEST(TokenizerJson, BadVocabulariesAndMergesAreErrors) {
  auto model = [](const std::string &vocab, const std::string &merges) {
    return byteLevel(R"({"type": "BPE", "vocab": )" + vocab + R"(, "merges": )" + merges + "}");
  };
  EXPECT_EQ(errorOf(model(R"({"a": 0, "b": 0})", "[]")), "tok.json: model.vocab.b: id 0 is also \"a\"'s");
  EXPECT_EQ(errorOf(model(R"({"a": 1048576})", "[]")), "tok.json: model.vocab.a: 1048576 is outside 0..1048575");
  EXPECT_EQ(errorOf(model(R"({"a": 0, "b": 1})", R"(["a c"])")),
            "tok.json: model.merges[0]: \"c\" is not in the vocabulary");
  EXPECT_EQ(errorOf(model(R"({"a": 0, "b": 1})", R"(["a b"])")),
            "tok.json: model.merges[0]: \"ab\" is not in the vocabulary");
  EXPECT_EQ(errorOf(model(R"({"a": 0, "b": 1, "ab": 2})", R"(["a b", ["a", "b"]])")),
            "tok.json: model.merges[1]: \"a\" + \"b\" is merged twice");
  EXPECT_EQ(errorOf(model(R"({"a": 0})", R"(["a  a"])")),
            "tok.json: model.merges[0]: \"a  a\" is not two tokens separated by one space");
}

TEST(TokenizerJson, BadAddedTokensAreErrors) {
  auto added = [](const std::string &tokens) { return byteLevel(kModel, tokens); };
  EXPECT_EQ(errorOf(added(R"([{"id": 0, "content": "z"}])")),
            "tok.json: added_tokens[0].content: \"z\" has id 0, which the vocabulary gives \"a\"");
  EXPECT_EQ(errorOf(added(R"([{"id": 9, "content": "x"}, {"id": 9, "content": "y"}])")),
            "tok.json: added_tokens[1].id: id 9 is added twice");
  // Text that is matched must be whole characters: the JSON reader takes only UTF-8.
  EXPECT_NE(errorOf(added("[{\"id\": 9, \"content\": \"\xE2\x80\"}]")).find("invalid UTF-8 in a string"),
            std::string::npos);
  std::string many = "[";
  for (size_t i = 0; i <= kMaxAddedTokens; ++i)
    many += (i ? ",{\"id\":" : "{\"id\":") + std::to_string(100 + i) + ",\"content\":\"t" + std::to_string(i) + "\"}";
  EXPECT_EQ(errorOf(added(many + "]")),
            "tok.json: added_tokens: 65537 added tokens, more than the 65536 needlec takes");
  EXPECT_NE(errorOf(byteLevel(kModel).substr(0, 200)).find("tok.json: line"), std::string::npos);
}

} // namespace
} // namespace needle::tokenizer
