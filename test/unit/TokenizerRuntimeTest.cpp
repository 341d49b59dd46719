// The compiled tokenizer's runtime (runtime/tokenizer/tokenizer.h) on tables built from a small
// byte-level BPE (compiler/Tokenizer/Tables.h): the reference tokenizer's ids, a piece long
// enough that a quadratic BPE would show, the contract's edges (no room, too little scratch),
// and the streaming decoder's holding back of split UTF-8 and its U+FFFD. The real tokenizers
// are checked against the oracle in test/lit/tokenizer/compiled.test.
#include "Support/Error.h"
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/Tables.h"
#include "Tokenizer/TokenizerJson.h"
#include "TokenizerTestSupport.h"

#include <cstring>
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace needle::tokenizer {
namespace {

/// 256 byte tokens (id = byte), "aa" (256), "aaaa" (257), " a" (258), and the special "<x>" (259).
TokenizerSpec spec() {
  const std::string vocab = byteTokensJson();
  return parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 259, "content": "<x>", "special": true, "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false}],
    "normalizer": null, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": " ?\\p{L}+|\\s+|[^\\s\\p{L}]+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {)" +
                                vocab + R"("aa": 256, "aaaa": 257, "Ġa": 258}, "merges": ["a a", "aa aa", "Ġ a"]}})",
                            "tok.json");
}

using Ids = std::vector<int32_t>;

struct Runtime {
  TokenizerTables tables = buildTokenizerTables(spec(), "tok.json");
  needle_rt::TokTables view = tables.view();

  int encode(const std::string &text, std::vector<int32_t> &ids, size_t &count, size_t scratchBytes = 0) const {
    std::vector<unsigned char> scratch(scratchBytes ? scratchBytes
                                                    : needle_rt::tok_encode_scratch_size(view, text.size()));
    return needle_rt::tok_encode(view, text.data(), text.size(), needle_rt::TOK_ENCODE_SPECIAL, scratch.data(),
                                 scratch.size(), ids.data(), ids.size(), &count);
  }
  std::vector<int32_t> encode(const std::string &text) const {
    std::vector<int32_t> ids(text.size() + 1);
    size_t count = 0;
    EXPECT_EQ(encode(text, ids, count), needle_rt::status_ok);
    ids.resize(count);
    return ids;
  }
};

TEST(TokenizerRuntime, EncodesAsTheReferenceDoes) {
  const Runtime runtime;
  const ReferenceTokenizer reference(spec(), "tok.json");
  for (const std::string text : {"", "a", "aaaaa a<x>aaa", " aa\xff\xfe a", "<x><x>", "é a\n\n aaaaaaa!", "<x"})
    EXPECT_EQ(runtime.encode(text), reference.encode(text)) << text;
  // One piece of 200,000 letters: the heap keeps BPE at n log n (a quadratic loop would take
  // minutes here).
  const std::string word(200000, 'a');
  EXPECT_EQ(runtime.encode(word), std::vector<int32_t>(50000, 257));
}

/// The runtime's ids for `text`, special tokens matched.
std::vector<int32_t> encodeWith(const needle_rt::TokTables &view, const std::string &text) {
  std::vector<unsigned char> scratch(needle_rt::tok_encode_scratch_size(view, text.size()));
  std::vector<int32_t> ids(64);
  size_t count = 0;
  EXPECT_EQ(needle_rt::tok_encode(view, text.data(), text.size(), needle_rt::TOK_ENCODE_SPECIAL, scratch.data(),
                                  scratch.size(), ids.data(), ids.size(), &count),
            needle_rt::status_ok);
  ids.resize(std::min(count, ids.size()));
  return ids;
}

/// The runtime's streaming decoder's text for `ids`, one at a time.
std::string decodeWith(const needle_rt::TokTables &view, const Ids &ids) {
  needle_rt::TokDecoder decoder;
  needle_rt::tok_decoder_init(view, &decoder);
  std::string text;
  for (int32_t id : ids) {
    char out[16];
    size_t length = 0;
    EXPECT_EQ(needle_rt::tok_decode_next(view, &decoder, id, out, sizeof out, &length), needle_rt::status_ok);
    text.append(out, length);
  }
  return text;
}

/// A word that is a token is that token only when BPE makes it: "abc" is in the vocabulary,
/// but "b c" merges first and "a bc" does not merge, so the word is "a", "bc" in both layouts,
/// while "ab" (which BPE does make) is one token.
TEST(TokenizerRuntime, AWordIsATokenOnlyWhereBpeMakesIt) {
  const TokenizerSpec spec = parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [], "normalizer": null, "post_processor": null, "decoder": {"type": "ByteLevel"},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {)" + byteTokensJson() +
                                                    R"("bc": 256, "ab": 257, "abc": 258},
              "merges": ["b c", "a b", "ab c"]}})",
                                                "tok.json");
  const ReferenceTokenizer reference(spec, "tok.json");
  for (const TableLayout layout : {TableLayout::Fast, TableLayout::Small}) {
    TokenizerTables tables = buildTokenizerTables(spec, "tok.json", layout);
    const needle_rt::TokTables view = tables.view();
    EXPECT_EQ(encodeWith(view, "abc"), Ids({'a', 256}));
    EXPECT_EQ(encodeWith(view, "ab"), Ids{257});
    for (const std::string text : {"abc ab bc abcabc", " abc", "cab"})
      EXPECT_EQ(encodeWith(view, text), reference.encode(text)) << text;
  }
}

TEST(TokenizerRuntime, SentencePieceStyleEncodesAndDecodesAsTheReferenceDoes) {
  // Prepend and Replace normalizers; a byte fallback that covers only "A", so other unknown
  // characters become <unk>, one for a run (fuse_unk); the decoder strips one leading space.
  const TokenizerSpec spec = parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null, "post_processor": null,
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
              "vocab": {"<s>": 0, "<unk>": 1, "<0x41>": 2, "▁": 3, "a": 4, "▁a": 5}, "merges": ["▁ a"]}})",
                                                "tok.json");
  TokenizerTables tables = buildTokenizerTables(spec, "tok.json");
  const needle_rt::TokTables view = tables.view();
  const ReferenceTokenizer reference(spec, "tok.json");
  for (const std::string text : {"a a", "A bcd a", "<s>a", "", "  a\xff"})
    EXPECT_EQ(encodeWith(view, text), reference.encode(text)) << text;
  const std::string text = decodeWith(view, {5, 3, 2, 1, 5});
  EXPECT_EQ(text, reference.decode({5, 3, 2, 1, 5}));
  EXPECT_EQ(text, "a A<unk> a");
}

/// A SentencePiece-style tokenizer with a Metaspace pre-tokenizer of `scheme` and `split`:
/// "<s>" 0, "<unk>" 1, "▁" 2, "a" 3, "b" 4, "▁a" 5, "▁▁" 6, "▁b" 7; "▁ ▁" merges first.
TokenizerSpec metaspace(const std::string &scheme, bool split) {
  return parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null, "post_processor": null,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": ")" +
                                scheme + R"(", "split": )" + (split ? "true" : "false") + R"(},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": false,
              "vocab": {"<s>": 0, "<unk>": 1, "▁": 2, "a": 3, "b": 4, "▁a": 5, "▁▁": 6, "▁b": 7},
              "merges": ["▁ ▁", "▁ a", "▁ b"]}})",
                            "tok.json");
}

TEST(TokenizerRuntime, MetaspaceAsTheRustCrateHasIt) {
  // The oracle (@huggingface/tokenizers) ignores `split`; the Rust crate splits before each
  // replacement (MergedWithNext), so "▁▁" cannot merge: these ids follow its rules by hand.
  const std::vector<std::tuple<std::string, bool, std::string, Ids>> cases = {
      {"first", true, "a  b", {5, 2, 7}},    // "▁a▁▁b": pieces "▁a", "▁", "▁b"
      {"first", false, "a  b", {5, 6, 4}},   // one piece: "▁ ▁" merges first
      {"first", true, "<s>a b", {0, 3, 7}},  // not at the start: no "▁" before "a"
      {"always", true, "<s>a b", {0, 5, 7}}, // always
      {"never", false, "a b", {3, 7}},       // never
      {"first", true, " a", {5}},            // starts with the replacement already
  };
  for (const auto &[scheme, split, text, ids] : cases) {
    const TokenizerSpec spec = metaspace(scheme, split);
    TokenizerTables tables = buildTokenizerTables(spec, "tok.json");
    EXPECT_EQ(ReferenceTokenizer(spec, "tok.json").encode(text), ids) << scheme << " " << split << " " << text;
    EXPECT_EQ(encodeWith(tables.view(), text), ids) << scheme << " " << split << " " << text;
  }
  // The decoder: every replacement a space, the first token's leading one dropped (the oracle's rule).
  const TokenizerSpec spec = metaspace("first", true);
  TokenizerTables tables = buildTokenizerTables(spec, "tok.json");
  EXPECT_EQ(ReferenceTokenizer(spec, "tok.json").decode({5, 2, 7}), "a  b");
  EXPECT_EQ(decodeWith(tables.view(), {5, 2, 7}), "a  b");
  EXPECT_EQ(ReferenceTokenizer(spec, "tok.json").decode({6, 3}), " a");
  EXPECT_EQ(decodeWith(tables.view(), {6, 3}), " a");
}

/// The reference's and the runtime's ids for each text of `cases` equal the ids given.
void expectBoth(const TokenizerSpec &spec, const std::vector<std::pair<std::string, Ids>> &cases) {
  TokenizerTables tables = buildTokenizerTables(spec, "tok.json");
  const needle_rt::TokTables view = tables.view();
  const ReferenceTokenizer reference(spec, "tok.json");
  for (const auto &[text, ids] : cases) {
    EXPECT_EQ(reference.encode(text), ids) << text;
    EXPECT_EQ(encodeWith(view, text), ids) << text;
  }
}

TEST(TokenizerRuntime, AddedTokensStripAndMatchWholeWordsAsTheRustCrateHasIt) {
  // Byte tokens (id = byte) and the added "<w>" (single_word, 256), "<l>" (lstrip, 257), "<r>"
  // (rstrip, 258), "<x>" (259). The oracle ignores single_word: these ids follow the crate's
  // rules by hand (\w: letters, marks, digits, connector punctuation).
  const std::string added = R"([
      {"id": 256, "content": "<w>", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
      {"id": 257, "content": "<l>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": false},
      {"id": 258, "content": "<r>", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": false},
      {"id": 259, "content": "<x>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}])";
  const TokenizerSpec spec = parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": )" + added + R"(, "normalizer": null, "post_processor": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
    "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {)" +
                                                    byteTokensJson() + R"("Ġa": 260}, "merges": ["Ġ a"]}})",
                                                "tok.json");
  const Ids wordAtEnd = {'a', '<', 'w', '>'}, markBefore = {'e', 0xCC, 0x81, '<', 'w', '>'};
  expectBoth(spec, {
                       {" <w> ", {' ', 256, ' '}},
                       {"<w>!", {256, '!'}},
                       {"a<w>", wordAtEnd},                        // a word character before: text
                       {"<w>_", {'<', 'w', '>', '_'}},             // '_' is one too
                       {"e\u0301<w>", markBefore},                 // so is a combining mark
                       {"\u00e9<w>", {0xC3, 0xA9, '<', 'w', '>'}}, // and a letter beyond ASCII
                       {"a \t <l>b", {'a', 257, 'b'}},             // lstrip takes the white space before
                       {"a<r> \u3000\n b", {'a', 258, 'b'}},       // rstrip after, any Unicode white space
                       {"<x> <l>", {259, 257}},                    // lstrip up to the previous match
                       {"<r> <r>", {258, 258}},
                   });
}

TEST(TokenizerRuntime, NormalizedAddedTokensMatchTheirNormalizedContent) {
  // Llama 2's normalizer (Prepend "▁", Replace " " with "▁"): "<s>" normalized is "▁<s>", so it
  // matches only after a space or at the start. A "<s>" right after one is text, as in the Rust
  // crate (the oracle takes any text piece equal to a token's content as that token).
  const TokenizerSpec spec = parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": true, "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null, "post_processor": null,
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
               {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": false,
              "vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "a": 3, "▁a": 4}, "merges": ["▁ a"]}})",
                                                "tok.json");
  expectBoth(spec, {{"a <s><s>", {4, 1, 0}}, {"<s>a", {1, 3}}, {"a<s>", {4, 0}}});
}

TEST(TokenizerRuntime, NormalizersThatCouldGrowATextPast2To31AreRefused) {
  // 31 Replace steps doubling "a": the bound would pass 2^31 (and wrap a 32-bit factor at 32).
  std::string steps;
  for (int i = 0; i < 31; ++i)
    steps += std::string(i ? ", " : "") + R"({"type": "Replace", "pattern": {"String": "a"}, "content": "aa"})";
  const TokenizerSpec spec = parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [], "normalizer": {"type": "Sequence", "normalizers": [)" +
                                                    steps + R"(]},
    "pre_tokenizer": null, "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"<unk>": 0, "a": 1}, "merges": []}})",
                                                "tok.json");
  try {
    buildTokenizerTables(spec, "tok.json");
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "tok.json: normalizer: steps that can lengthen a text past 2^31 times is not compiled "
                           "yet (docs/tokenizer.md, \"The compiled tokenizer\")");
  }
}

TEST(TokenizerRuntime, NoRoomGivesTheCountAndWritesNothingPastIt) {
  const Runtime runtime;
  std::vector<int32_t> ids(2, -7);
  size_t count = 0;
  EXPECT_EQ(runtime.encode("a a a a", ids, count), needle_rt::status_err_space);
  EXPECT_EQ(count, 4u);
  std::vector<int32_t> none;
  EXPECT_EQ(runtime.encode("a a a a", none, count), needle_rt::status_err_space);
  EXPECT_EQ(count, 4u);
  EXPECT_EQ(runtime.encode("a a", ids, count, needle_rt::tok_encode_scratch_size(runtime.view, 3) - 1),
            needle_rt::status_err_arg);
}

TEST(TokenizerRuntime, TheDecoderHoldsSplitSequencesAndReplacesInvalidOnes) {
  const Runtime runtime;
  needle_rt::TokDecoder decoder;
  needle_rt::tok_decoder_init(runtime.view, &decoder);
  char out[16];
  size_t length = 0;
  // "é" is C3 A9: its first byte's token gives nothing yet, the second completes it.
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 0xC3, out, sizeof out, &length), needle_rt::status_ok);
  EXPECT_EQ(length, 0u);
  // No room for what it would write: an error, the decoder unchanged.
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 0xA9, out, 1, &length), needle_rt::status_err_space);
  EXPECT_EQ(length, 2u);
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 0xA9, out, sizeof out, &length), needle_rt::status_ok);
  EXPECT_EQ(std::string(out, length), "é");
  // An invalid byte is U+FFFD; a lead byte then a non-continuation is U+FFFD and that byte.
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 0xFF, out, sizeof out, &length), needle_rt::status_ok);
  EXPECT_EQ(std::string(out, length), "\uFFFD");
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 0xE2, out, sizeof out, &length), needle_rt::status_ok);
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 258, out, sizeof out, &length), needle_rt::status_ok);
  EXPECT_EQ(std::string(out, length), "\uFFFD a");
  // A sequence still incomplete at the end is U+FFFD.
  ASSERT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 0xF0, out, sizeof out, &length), needle_rt::status_ok);
  ASSERT_EQ(needle_rt::tok_decode_flush(runtime.view, &decoder, out, sizeof out, &length), needle_rt::status_ok);
  EXPECT_EQ(std::string(out, length), "\uFFFD");
  EXPECT_EQ(needle_rt::tok_decode_next(runtime.view, &decoder, 260, out, sizeof out, &length),
            needle_rt::status_err_token);
}

TEST(TokenizerRuntime, ImageArraysAreAlignedForTheirElements) {
  // The image is read in place through typed pointers: the 8-byte merge slots must sit at a
  // multiple of 8 whatever comes before them (a misaligned uint64_t load traps on some Arm cores).
  const TokenizerTables tables = buildTokenizerTables(spec(), "tok.json");
  const std::vector<uint8_t> image = tables.image();
  needle_rt::TokImage header;
  std::memcpy(&header, image.data(), sizeof header);
  EXPECT_EQ(header.merges % alignof(needle_rt::TokMerge), 0u);
  for (uint32_t offset : {header.token_bases, header.token_steps, header.byte_ids, header.added, header.word_starts})
    EXPECT_EQ(offset % 4, 0u);
  EXPECT_EQ(header.blob % 4, 0u);
}

} // namespace
} // namespace needle::tokenizer
