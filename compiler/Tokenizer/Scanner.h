// The pre-tokenizer's regex compiled to a scanner: a DFA over symbols (classes of code points
// that every character class of the pattern treats alike), with one symbol of lookahead for the
// pattern's one-character lookaheads. What the compiled tokenizer will carry as tables; here it
// is built and run in the compiler, and checked against the Pike VM (Regex) it is made from.
// Plain C++, no MLIR.
#pragma once

#include "Tokenizer/Regex.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace needle::tokenizer {

struct ScannerTables {
  /// Code points to symbols: symbol of c = symbolOf[k] for the last k with runStarts[k] <= c.
  std::vector<char32_t> runStarts;
  std::vector<uint16_t> symbolOf;
  uint16_t invalidSymbol = 0; // a byte that begins no valid UTF-8 sequence
  uint16_t endSymbol = 0;     // the end of the text
  int32_t symbols = 0, states = 0;
  /// By state * symbols + symbol: the next state (-1: no thread left), and whether a match ends
  /// just before that symbol (the lookahead decides it).
  std::vector<int32_t> next;
  std::vector<uint8_t> acceptBefore;

  uint16_t symbol(char32_t c) const;
  /// Same as Regex::matchAt: the end of the leftmost-first match at `start`, or `start`.
  size_t matchAt(const std::vector<char32_t> &text, size_t start) const;
  /// Same as Regex::splitIsolated.
  std::vector<std::pair<size_t, size_t>> splitIsolated(const std::vector<char32_t> &text) const;
};

/// Builds the scanner of `regex`: the symbols, then the DFA whose states are the Pike VM's
/// ordered thread lists, so the leftmost-first semantics carry over exactly.
ScannerTables compileScanner(const Regex &regex);

} // namespace needle::tokenizer
