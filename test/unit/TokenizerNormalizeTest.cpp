// The compiled tokenizer's NFC and NFKC (runtime/tokenizer/unicode.h) on the tables needlec
// builds from ICU, against ICU itself (normalizeText, the reference tokenizer's normalizer):
// every code point in one text (so each also meets its neighbours), and random texts drawn from
// what normalization reorders and composes (marks of many classes in any order, Hangul jamo
// and syllables, singletons, exclusions, compatibility characters, invalid bytes). The
// normalized text must also stay within the bound the scratch is sized by.
#include "Tokenizer/Tables.h"
#include "Tokenizer/TokenizerJson.h"
#include "Tokenizer/Unicode.h"
#include "TokenizerTestSupport.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace needle::tokenizer {
namespace {

/// A byte-level tokenizer whose normalizer is `form` ("NFC" or "NFKC").
TokenizerSpec spec(const std::string &form) {
  return parseTokenizerJson(R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
    "normalizer": {"type": ")" + form +
                                R"("}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
    "use_regex": false}, "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {)" +
                                byteTokensJson() + R"("Ġa": 256}, "merges": ["Ġ a"]}})",
                            "tok.json");
}

/// The runtime's normalizer on `text`, in scratch of the size tok_encode asks for.
std::string runtimeNormalize(const needle_rt::TokTables &t, const std::string &text) {
  std::vector<uint8_t> scratch(needle_rt::tok_encode_scratch_size(t, text.size()));
  const needle_rt::TokWork work = needle_rt::tok_work(t, scratch.data(), text.size());
  size_t length = 0;
  const uint8_t *out =
      needle_rt::tok_normalize(t, 0, t.normalizer_steps, reinterpret_cast<const uint8_t *>(text.data()), text.size(),
                               true, work.buffers, work, &length);
  EXPECT_LE(length, needle_rt::tok_normalized_bound(t, text.size()));
  return std::string(reinterpret_cast<const char *>(out), length);
}

class Normalize : public testing::TestWithParam<const char *> {
protected:
  NormalForm form() const { return std::string(GetParam()) == "NFC" ? NormalForm::Nfc : NormalForm::Nfkc; }
  TokenizerTables tables = buildTokenizerTables(spec(GetParam()), "tok.json");
  needle_rt::TokTables view = tables.view();
};

TEST_P(Normalize, EveryCodePointAsIcuDoes) {
  for (char32_t first = 0; first < 0x110000; first += 4096) { // texts of 4,096 code points
    std::string text;
    for (char32_t c = first; c < first + 4096; ++c)
      if (c < 0xD800 || c > 0xDFFF)
        appendUtf8(text, c);
    ASSERT_TRUE(runtimeNormalize(view, text) == normalizeText(text, form()))
        << "from U+" << std::hex << uint32_t(first);
  }
}

TEST_P(Normalize, RandomTextsAsIcuDoes) {
  // Marks of classes 1, 7, 9, 10, 202, 216, 220, 230, 232, 240; starters they compose with; Hangul
  // jamo (L, V, T) and syllables (LV, LVT); singletons (Ohm, Angstrom), exclusions (U+0958,
  // U+0344), a starter pair that composes (U+0B47 U+0B3E), compatibility characters (ﬁ, ²,
  // full-width A, ①, U+FDFA); and bytes no UTF-8 sequence begins with or completes.
  const std::vector<std::string> pool = {
      "a",      "e",      "o",      "A",      "u",      "\u0301",   "\u0300", "\u0308", "\u0327", "\u0323",
      "\u0334", "\u093c", "\u094d", "\u05b0", "\u031b", "\u0345",   "\u035c", "\u0315", "\u1100", "\u1161",
      "\u11a8", "\u1112", "\u1175", "\u11c2", "\uac00", "\uac01",   "\ud7a3", "\u2126", "\u212b", "\u0958",
      "\u0344", "\u0b47", "\u0b3e", "\u0915", "\ufb01", "\u00b2",   "\uff21", "\u2460", "\ufdfa", "\u00c5",
      "\u1e9b", "\u1ea5", "\u03d3", " ",      "\xff",   "\xe2\x82", "\x80"};
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    for (int n = std::uniform_int_distribution<int>(0, 12)(rng); n > 0; --n)
      text += pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    ASSERT_EQ(runtimeNormalize(view, text), normalizeText(text, form())) << "seed " << seed << ", text " << i;
  }
}

TEST_P(Normalize, LongRunsOfMarksSortStably) {
  std::string text = "a";
  for (int i = 0; i < 300; ++i)
    text += "\u0301\u0327\u05b0\u0323\u0334\u0300\u093c";
  text += "e\u0301\u0323";
  EXPECT_EQ(runtimeNormalize(view, text), normalizeText(text, form()));
}

INSTANTIATE_TEST_SUITE_P(Forms, Normalize, testing::Values("NFC", "NFKC"));

} // namespace
} // namespace needle::tokenizer
