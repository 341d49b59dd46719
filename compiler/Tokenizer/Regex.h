// The pre-tokenizer's regex: the subset of Oniguruma syntax that tokenizers use, parsed into a
// program over code points with Oniguruma's leftmost-first (backtracking) semantics, run by a
// Pike VM: the reference the compiled scanner will be checked against. Anything outside the
// subset is a one-line error naming the pattern and the offset. Plain C++, no MLIR.
//
// Supported: alternation, (...) (?:...) (?i:...), greedy and lazy * + ? {n} {n,} {n,m};
// literals, ., \r \n \t \f \v \s \S \p{..} \P{..} \pL \x{..} \xHH and escaped punctuation;
// classes [...] [^...] with ranges and those escapes; a lookahead (?!X) or (?=X) of one character
// (a literal, an escape or a class) at the end of a branch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace needle::tokenizer {

/// A set of code points: ranges and general-category masks, or White_Space, then negated.
struct CharClass {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  uint32_t categories = 0;    // categoryMask() bits
  uint32_t notCategories = 0; // \P{..} inside a class: the code points outside these
  bool whiteSpace = false, notWhiteSpace = false;
  bool negated = false;
  bool caseless = false; // (?i): also matches the case-folded code point's class
  bool contains(char32_t c) const;
};

class Regex {
public:
  /// Parses `pattern`; errors name `where` (the JSON path of the pattern).
  Regex(std::string_view pattern, std::string where);

  /// The end of the leftmost-first match that starts exactly at `start`, or `start` when there
  /// is none (an empty match counts as none).
  size_t matchAt(const std::vector<char32_t> &text, size_t start) const;

  /// Split with behaviour Isolated: the matches, leftmost first, and the spans between them,
  /// in order, as [begin, end) pairs covering the text.
  std::vector<std::pair<size_t, size_t>> splitIsolated(const std::vector<char32_t> &text) const;

  struct Instruction {
    enum class Op { Class, Split, Jump, AssertNext, AssertNotNext, Match };
    Op op;
    int32_t x = 0, y = 0; // Class/Assert*: the class index; Split: the preferred and the other target; Jump: x
  };

private:
  std::vector<Instruction> program_;
  std::vector<CharClass> classes_;
  friend class RegexCompiler;
};

} // namespace needle::tokenizer
