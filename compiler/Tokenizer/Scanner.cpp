#include "Tokenizer/Scanner.h"

#include "Support/Error.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <map>

namespace needle::tokenizer {

namespace {

using Op = Regex::Instruction::Op;

/// States a scanner may have: far above what tokenizer patterns make (Llama 3's makes 17).
constexpr size_t kMaxStates = 1 << 12;
/// Character classes a pattern may have for a scanner: each is tested on every code point when
/// the symbols are found (Llama 3's has about 26).
constexpr size_t kMaxClasses = 128;

/// The symbols: code points grouped by which classes contain them.
struct Symbols {
  std::vector<std::vector<bool>> members; // by symbol: does class k contain it

  uint16_t symbolFor(const std::vector<bool> &key, std::map<std::vector<bool>, uint16_t> &ids) {
    auto [it, added] = ids.emplace(key, static_cast<uint16_t>(members.size()));
    if (added)
      members.push_back(key);
    return it->second;
  }
};

Symbols buildSymbols(const Regex &regex, ScannerTables &tables) {
  Symbols symbols;
  std::map<std::vector<bool>, uint16_t> ids;
  const std::vector<CharClass> &classes = regex.classes();
  if (classes.size() > kMaxClasses)
    fail("the pattern has {} character classes; a scanner takes at most {}", classes.size(), kMaxClasses);
  const bool caseless = std::any_of(classes.begin(), classes.end(), [](const CharClass &k) { return k.caseless; });
  // Which classes hold c, each code point's facts looked up once for all classes (needlec
  // compiles a tokenizer's scanners on every run; this loop was most of it).
  auto fill = [&](char32_t c, std::vector<bool> &in) {
    const CodePointFacts facts = CodePointFacts::of(c);
    const CodePointFacts folded = caseless ? CodePointFacts::of(foldCase(c)) : CodePointFacts{};
    for (size_t k = 0; k < classes.size(); ++k)
      in[k] = classes[k].contains(facts, folded);
  };
  // Neighbouring code points mostly share their classes: look a key up only when it changes.
  std::vector<bool> in(classes.size()), previous;
  uint16_t symbol = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    fill(c, in);
    if (in != previous) {
      symbol = symbols.symbolFor(in, ids);
      previous = in;
    }
    if (tables.symbolOf.empty() || tables.symbolOf.back() != symbol) {
      tables.runStarts.push_back(c);
      tables.symbolOf.push_back(symbol);
    }
  }
  fill(kInvalidByte, in);
  tables.invalidSymbol = symbols.symbolFor(in, ids);
  tables.endSymbol = static_cast<uint16_t>(symbols.members.size()); // in no class
  symbols.members.push_back(std::vector<bool>(classes.size()));
  return symbols;
}

/// The DFA: each state is the Pike VM's ordered list of threads waiting at a position (Class,
/// unresolved lookaheads, Match), cut after the first Match as the Pike VM cuts them.
class DfaBuilder {
public:
  DfaBuilder(const Regex &regex, const Symbols &symbols) : program_(regex.program()), symbols_(symbols) {}

  void run(ScannerTables &tables) {
    tables.symbols = static_cast<int32_t>(symbols_.members.size());
    std::vector<int32_t> start;
    std::vector<bool> seen(program_.size());
    closure(0, start, seen);
    stateOf(start);
    for (size_t s = 0; s < states_.size(); ++s) // states_ grows as transitions find new ones
      for (int32_t symbol = 0; symbol < tables.symbols; ++symbol) {
        std::vector<int32_t> next;
        std::vector<bool> seenNext(program_.size());
        bool accept = false;
        const std::vector<int32_t> items = states_[s];
        step(items, static_cast<uint16_t>(symbol), next, seenNext, accept);
        tables.next.push_back(next.empty() ? -1 : stateOf(next));
        tables.acceptBefore.push_back(accept);
      }
    tables.states = static_cast<int32_t>(states_.size());
  }

private:
  /// Follows jumps and splits from pc in priority order; keeps what waits for a character.
  void closure(int32_t pc, std::vector<int32_t> &out, std::vector<bool> &seen) const {
    if (seen[pc])
      return;
    seen[pc] = true;
    const Regex::Instruction &in = program_[pc];
    if (in.op == Op::Jump)
      return closure(in.x, out, seen);
    if (in.op == Op::Split) {
      closure(in.x, out, seen);
      return closure(in.y, out, seen);
    }
    out.push_back(pc);
  }

  /// Threads `items` meeting `symbol`: those that consume it continue into `next`; a lookahead
  /// decided by it continues at once. Returns true at a Match (a match ends before `symbol`),
  /// which cuts every thread after it.
  bool step(const std::vector<int32_t> &items, uint16_t symbol, std::vector<int32_t> &next, std::vector<bool> &seenNext,
            bool &accept) const {
    const std::vector<bool> &in = symbols_.members[symbol];
    for (int32_t pc : items) {
      const Regex::Instruction &instruction = program_[pc];
      switch (instruction.op) {
      case Op::Match:
        accept = true;
        return true;
      case Op::Class:
        if (in[instruction.x])
          closure(pc + 1, next, seenNext);
        break;
      case Op::AssertNext:
      case Op::AssertNotNext:
        if (in[instruction.x] == (instruction.op == Op::AssertNext)) {
          std::vector<int32_t> after;
          std::vector<bool> seen(program_.size());
          closure(pc + 1, after, seen);
          if (step(after, symbol, next, seenNext, accept))
            return true;
        }
        break;
      case Op::Jump:
      case Op::Split:
        break; // closures hold neither
      }
    }
    return false;
  }

  int32_t stateOf(std::vector<int32_t> items) {
    auto match = std::find_if(items.begin(), items.end(), [&](int32_t pc) { return program_[pc].op == Op::Match; });
    if (match != items.end())
      items.erase(match + 1, items.end());
    auto [it, added] = ids_.emplace(items, static_cast<int32_t>(states_.size()));
    if (added) {
      if (states_.size() == kMaxStates)
        fail("the pattern's scanner needs more than {} states", kMaxStates);
      states_.push_back(items);
    }
    return it->second;
  }

  const std::vector<Regex::Instruction> &program_;
  const Symbols &symbols_;
  std::vector<std::vector<int32_t>> states_;
  std::map<std::vector<int32_t>, int32_t> ids_;
};

} // namespace

uint16_t ScannerTables::symbol(char32_t c) const {
  if (c >= kInvalidByte)
    return invalidSymbol;
  const auto run = std::upper_bound(runStarts.begin(), runStarts.end(), c) - 1;
  return symbolOf[static_cast<size_t>(run - runStarts.begin())];
}

size_t ScannerTables::matchAt(const std::vector<char32_t> &text, size_t start) const {
  size_t end = start;
  int32_t state = 0;
  for (size_t pos = start;; ++pos) {
    const uint16_t sym = pos < text.size() ? symbol(text[pos]) : endSymbol;
    const size_t at = static_cast<size_t>(state) * static_cast<size_t>(symbols) + sym;
    if (acceptBefore[at])
      end = pos;
    if (sym == endSymbol || next[at] < 0)
      return end;
    state = next[at];
  }
}

std::vector<std::pair<size_t, size_t>> ScannerTables::splitIsolated(const std::vector<char32_t> &text) const {
  return isolatedPieces(text.size(), [&](size_t start) { return matchAt(text, start); });
}

ScannerTables compileScanner(const Regex &regex) {
  ScannerTables tables;
  const Symbols symbols = buildSymbols(regex, tables);
  DfaBuilder(regex, symbols).run(tables);
  return tables;
}

} // namespace needle::tokenizer
