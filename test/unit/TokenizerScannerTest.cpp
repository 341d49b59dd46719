// The compiled scanner (compiler/Tokenizer/Scanner.h) splits every text exactly as the Pike VM
// it is built from (Regex): the patterns of Llama 3, Qwen 3 and GPT-2, on random texts of the
// classes that stress them (a new seed each run, printed on a failure) and on edge cases.
#include "Tokenizer/Scanner.h"
#include "Tokenizer/Train.h"
#include "Tokenizer/Unicode.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace needle::tokenizer {
namespace {

// Inputs, as the tokenizer files spell them (not expected values); Llama 3's is kLlama3Pattern.
const char *const kQwen3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char *const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// A random text of code points drawn from letters of several scripts, digits, white space of
/// every kind, punctuation, apostrophes, emoji and combining marks, and invalid bytes.
std::vector<char32_t> randomText(std::mt19937 &rng) {
  static const std::vector<std::u32string> kinds = {U"abcXYZ\u00e9\u00df\u017f",
                                                    U"\u0627\u0644\u0639\u0631",
                                                    U"\u65e5\u672c\u8a9e\u3042",
                                                    U"0123456789\u0663\uff12",
                                                    U" \t\n\r\u00a0\u3000\u2028\u0085\f\v",
                                                    U"!?.,;:'\"-()[]{}<>/\\@#",
                                                    U"'",
                                                    U"\U0001F600\u200d\ufe0f\u0301"};
  std::vector<char32_t> text;
  const int length = std::uniform_int_distribution<int>(0, 24)(rng);
  for (int i = 0; i < length; ++i) {
    const size_t kind = std::uniform_int_distribution<size_t>(0, kinds.size())(rng);
    if (kind == kinds.size()) {
      text.push_back(kInvalidByte + std::uniform_int_distribution<char32_t>(0x80, 0xFF)(rng));
      continue;
    }
    const std::u32string &chars = kinds[kind];
    text.push_back(chars[std::uniform_int_distribution<size_t>(0, chars.size() - 1)(rng)]);
  }
  return text;
}

TEST(TokenizerScanner, SplitsAsThePikeVmOnRandomTexts) {
  const unsigned seed = std::random_device{}();
  for (const char *pattern : {kLlama3Pattern, kQwen3, kGpt2}) {
    const Regex regex(pattern, "pattern");
    const ScannerTables scanner = compileScanner(regex);
    std::mt19937 rng(seed);
    for (int i = 0; i < 3000; ++i) {
      const std::vector<char32_t> text = randomText(rng);
      ASSERT_EQ(scanner.splitIsolated(text), regex.splitIsolated(text))
          << "seed " << seed << ", text " << i << ": " << encodeUtf8(text, 0, text.size());
    }
  }
}

TEST(TokenizerScanner, EdgeCasesAndSize) {
  const Regex regex(kLlama3Pattern, "pattern");
  const ScannerTables scanner = compileScanner(regex);
  for (const char *text : {"", " ", "   ", "a   b", "a   ", "\r\n\r\n  x", "'S'LL'\u017f", "12345 6", "\xff\xfe a"}) {
    const std::vector<char32_t> points = decodeUtf8(text);
    EXPECT_EQ(scanner.splitIsolated(points), regex.splitIsolated(points)) << text;
  }
  // Small enough to carry in an object: symbols and states in the dozens.
  EXPECT_LT(scanner.symbols, 64);
  EXPECT_LT(scanner.states, 256);
  EXPECT_LT(scanner.runStarts.size(), 8192u);
}

} // namespace
} // namespace needle::tokenizer
