// The call language as a minimal deterministic automaton over bytes (docs/tool-calls.md): built
// from the language's nodes by Thompson's construction (continuation first, so shared nodes with
// the same continuation are built once), determinized over classes of bytes that no part of the
// language tells apart, and minimized, which also merges what two tools share. No MLIR.
#pragma once

#include "Calls/Language.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace needle::calls {

struct ByteAutomaton {
  std::array<uint8_t, 256> classOf{}; // each byte's class
  uint32_t classes = 0;
  uint32_t states = 0;            // state 0 is the start
  std::vector<int32_t> next;      // [state * classes + class]: the next state, -1 for none
  std::vector<uint8_t> accepting; // [state]: 1 where a whole value ends

  int32_t step(uint32_t state, uint8_t byte) const { return next[size_t(state) * classes + classOf[byte]]; }
};

/// The most states the automaton may have, before and after minimizing.
inline constexpr uint32_t kMaxByteStates = 1u << 20;

/// The minimal automaton of `lang`; one with more than kMaxByteStates states is an error naming `source`.
ByteAutomaton buildByteAutomaton(const LangPtr &lang, const std::string &source);

/// A shortest text both automata accept, or none when their languages are disjoint.
std::optional<std::string> commonText(const ByteAutomaton &a, const ByteAutomaton &b);

} // namespace needle::calls
