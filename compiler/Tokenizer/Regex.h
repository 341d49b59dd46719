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

/// What a character class asks of a code point, looked up once: the scanner asks every class
/// about every code point, and these lookups were most of needlec's time per tokenizer.
struct CodePointFacts {
  char32_t c;
  uint32_t categories; // its general category's categoryMask() bit (none for an invalid byte)
  bool whiteSpace;
  static CodePointFacts of(char32_t c);
};

/// A set of code points: ranges and general-category masks, or White_Space, then negated.
struct CharClass {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  uint32_t categories = 0;    // categoryMask() bits
  uint32_t notCategories = 0; // \P{..} inside a class: the code points outside these
  bool whiteSpace = false, notWhiteSpace = false;
  bool negated = false;
  bool caseless = false; // (?i): also matches the case-folded code point's class
  /// Caseless: the case folding of each member of the ranges (the first 256 of a range), sorted.
  std::vector<char32_t> foldedMembers = {};

  bool contains(char32_t c) const;
  /// contains(c.c), given the facts of c and of its case folding (used only when caseless).
  bool contains(const CodePointFacts &c, const CodePointFacts &folded) const;

private:
  bool rawContains(const CodePointFacts &c) const;
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

  /// The program (instruction 0 starts it) and the classes its instructions name.
  const std::vector<Instruction> &program() const { return program_; }
  const std::vector<CharClass> &classes() const { return classes_; }

private:
  std::vector<Instruction> program_;
  std::vector<CharClass> classes_;
  friend class RegexCompiler;
};

/// Split with behaviour Isolated over a text of `length` code points, given `matchAt(start)` (the
/// end of the match at start, or start): matches leftmost first and the spans between them, in
/// order, covering the text; an empty match counts as none.
template <typename MatchAt>
std::vector<std::pair<size_t, size_t>> isolatedPieces(size_t length, const MatchAt &matchAt) {
  std::vector<std::pair<size_t, size_t>> pieces;
  size_t gap = 0;
  for (size_t start = 0; start < length;) {
    const size_t end = matchAt(start);
    if (end == start) {
      ++start;
      continue;
    }
    if (gap < start)
      pieces.push_back({gap, start});
    pieces.push_back({start, end});
    gap = start = end;
  }
  if (gap < length)
    pieces.push_back({gap, length});
  return pieces;
}

} // namespace needle::tokenizer
