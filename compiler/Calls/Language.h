// The call language as a regular expression over bytes (docs/tool-calls.md): what the schemas
// compile to (Schema.h) and the byte automaton is built from (ByteAutomaton.h). Nodes are shared,
// never copied: a $ref used twice is one node. No MLIR.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace needle::calls {

struct Lang;
using LangPtr = std::shared_ptr<const Lang>;

struct Lang {
  enum class Kind {
    Byte,    // one byte of `bytes`
    Seq,     // parts one after another
    Alt,     // one of parts
    Repeat,  // parts[0] between min and max times, `separator` between two
    Members, // an object's members: parts in order, those not `required` may be left out, `separator` between two
  };
  Kind kind = Kind::Seq;
  std::bitset<256> bytes;
  std::vector<LangPtr> parts;
  std::vector<bool> required; // Members
  uint64_t min = 0, max = 0;  // Repeat
  LangPtr separator;          // Repeat, Members: null for none
};

inline constexpr uint64_t kUnbounded = UINT64_MAX;

LangPtr byteSet(const std::bitset<256> &bytes);
LangPtr byteRange(uint8_t first, uint8_t last);
LangPtr literal(std::string_view text);
LangPtr seq(std::vector<LangPtr> parts);
LangPtr alt(std::vector<LangPtr> parts);
LangPtr repeat(LangPtr item, uint64_t min, uint64_t max, LangPtr separator = nullptr);
LangPtr members(std::vector<LangPtr> parts, std::vector<bool> required, LangPtr separator);

} // namespace needle::calls
