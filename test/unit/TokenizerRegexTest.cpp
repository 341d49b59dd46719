// The pre-tokenizer's regex (compiler/Tokenizer/Regex.h): Oniguruma's leftmost-first semantics
// on the constructs tokenizers use, and a one-line error for every construct outside them.
#include "Tokenizer/Regex.h"
#include "Tokenizer/Unicode.h"

#include "Support/Error.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace needle::tokenizer {
namespace {

/// The pieces Split (Isolated) makes of `text`, as strings.
std::vector<std::string> split(const std::string &pattern, const std::string &text) {
  const Regex regex(pattern, "pattern");
  const std::vector<char32_t> points = decodeUtf8(text);
  std::vector<std::string> out;
  for (const auto &[begin, end] : regex.splitIsolated(points))
    out.push_back(encodeUtf8(points, begin, end));
  return out;
}

std::string errorOf(const std::string &pattern) {
  try {
    Regex(pattern, "p");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

using Pieces = std::vector<std::string>;

TEST(TokenizerRegex, AlternativesArePreferredInOrderAndQuantifiersBacktrack) {
  // A greedy \s+ gives a space back so that (?!\S) holds: Llama 3's "\s+(?!\S)|\s+".
  EXPECT_EQ(split(R"(\s+(?!\S)|\s+|\p{L}+)", "a   b"), (Pieces{"a", "  ", " ", "b"}));
  EXPECT_EQ(split(R"(\s+(?!\S)|\s+|\p{L}+)", "a   "), (Pieces{"a", "   "}));
  // The first alternative that matches wins, not the longest.
  EXPECT_EQ(split("ab|abc|c", "abc"), (Pieces{"ab", "c"}));
  EXPECT_EQ(split("a+?", "aaa"), (Pieces{"a", "a", "a"}));
  EXPECT_EQ(split(R"(\p{N}{1,3})", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("x{2,}", "xxxxx x"), (Pieces{"xxxxx", " x"}));
  // Text no match covers becomes pieces of its own.
  EXPECT_EQ(split(R"(\p{N}+)", "ab12cd"), (Pieces{"ab", "12", "cd"}));
}

TEST(TokenizerRegex, ClassesPropertiesAndCaselessGroups) {
  EXPECT_EQ(split(R"([^\r\n\p{L}\p{N}]?\p{L}+)", "\u00bfQu\u00e9?"), (Pieces{"\u00bfQu\u00e9", "?"}));
  EXPECT_EQ(split(R"(\P{L}+)", "ab, cd"), (Pieces{"ab", ", ", "cd"}));
  // (?i:...) compares simple case folds: 'S and 'ſ (U+017F folds to s) match 's.
  EXPECT_EQ(split("(?i:'s|'ll)", "'S'Ll'\u017f'x"), (Pieces{"'S", "'Ll", "'\u017f", "'x"}));
  EXPECT_EQ(split(R"([a-c\x{4E00}-\x{4E01}]+)", "abd\u4e00\u4e01"), (Pieces{"ab", "d", "\u4e00\u4e01"}));
  EXPECT_EQ(split(R"(\.+|\x41)", "..A"), (Pieces{"..", "A"}));
  // . is anything but \n; an invalid byte is a code point of no category, matched by . only.
  EXPECT_EQ(split(R"(\p{L}+|.)", "a\xff\n"), (Pieces{"a", "\xff", "\n"}));
}

TEST(TokenizerRegex, ConstructsOutsideTheSubsetAreErrors) {
  EXPECT_EQ(errorOf(R"(\d+)"), "p: regex \"\\d+\": at offset 2: the escape \\d is not supported");
  EXPECT_EQ(errorOf("^a"), "p: regex \"^a\": at offset 0: anchors are not supported");
  EXPECT_EQ(errorOf("a++"), "p: regex \"a++\": at offset 2: possessive and stacked quantifiers are not supported");
  EXPECT_EQ(errorOf("[[a]]"), "p: regex \"[[a]]\": at offset 1: nested classes and class intersections are not "
                              "supported");
  EXPECT_EQ(errorOf("a(?!bc)"), "p: regex \"a(?!bc)\": at offset 6: a lookahead of more than one character is not "
                                "supported");
  EXPECT_EQ(errorOf(R"(\p{Han})"), "p: regex \"\\p{Han}\": at offset 7: \\p{Han} is not a general category needlec "
                                   "knows");
  EXPECT_EQ(errorOf("(?<name>a)"), "p: regex \"(?<name>a)\": at offset 1: group syntax (?<...) is not supported");
  EXPECT_EQ(errorOf("(a"), "p: regex \"(a\": at offset 2: missing ')'");
  EXPECT_EQ(errorOf("a)"), "p: regex \"a)\": at offset 1: unbalanced ')'");
  EXPECT_EQ(errorOf("a{3,2}"), "p: regex \"a{3,2}\": at offset 6: a bad {n,m} quantifier");
  EXPECT_EQ(errorOf("a{1001}"), "p: regex \"a{1001}\": at offset 6: a repeat count above 1000");
  // Nesting and repeats of repeats are bounded before the parser's stack or the program grows.
  EXPECT_EQ(errorOf(std::string(33, '(') + "a" + std::string(33, ')')),
            "p: regex \"" + std::string(33, '(') + "a" + std::string(33, ')') +
                "\": at offset 33: groups nest more than 32 deep");
  EXPECT_EQ(errorOf(std::string(100000, '(')).find("groups nest more than 32 deep") != std::string::npos, true);
  EXPECT_EQ(errorOf("((a{1000}){1000}){1000}"),
            "p: regex \"((a{1000}){1000}){1000}\": its repeats make more than 8192 instructions");
}

} // namespace
} // namespace needle::tokenizer
