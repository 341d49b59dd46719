#include "Tokenizer/Scanner.h"

#include "Support/Error.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <tuple>

namespace needle::tokenizer {

namespace {

using Op = Regex::Instruction::Op;

/// States a scanner may have: far above what tokenizer patterns make (Llama 3's makes 17).
constexpr size_t kMaxStates = 1 << 12;
/// Character classes a pattern may have for a scanner: each is tested on every code point when
/// the symbols are found (Llama 3's has about 26).
constexpr size_t kMaxClasses = 128;

/// Which character classes hold a code point, one bit per class.
using ClassSet = std::array<uint64_t, kMaxClasses / 64>;

bool holds(const ClassSet &set, size_t k) { return set[k / 64] >> (k % 64) & 1; }

/// The symbols: code points grouped by which classes contain them.
struct Symbols {
  std::vector<ClassSet> members; // by symbol

  uint16_t symbolFor(const ClassSet &key, std::map<ClassSet, uint16_t> &ids) {
    auto [it, added] = ids.emplace(key, static_cast<uint16_t>(members.size()));
    if (added)
      members.push_back(key);
    return it->second;
  }
};

/// The classes holding each code point. A code point outside every class's ranges (and, for
/// caseless classes, whose folding is outside them and their folded members) is held by the
/// classes its facts decide, so code points with the same facts share one answer: testing every
/// class on every code point was most of what needlec spent compiling a tokenizer.
class ClassMembership {
public:
  explicit ClassMembership(const std::vector<CharClass> &classes) : classes_(classes) {
    caseless_ = std::any_of(classes.begin(), classes.end(), [](const CharClass &k) { return k.caseless; });
    std::vector<std::pair<char32_t, char32_t>> ranges;
    for (const CharClass &k : classes) {
      ranges.insert(ranges.end(), k.ranges.begin(), k.ranges.end());
      for (char32_t c : k.foldedMembers)
        ranges.emplace_back(c, c);
    }
    std::sort(ranges.begin(), ranges.end());
    for (const auto &range : ranges)
      if (!listed_.empty() && range.first <= listed_.back().second + 1)
        listed_.back().second = std::max(listed_.back().second, range.second);
      else
        listed_.push_back(range);
  }

  ClassSet of(char32_t c) {
    const CodePointFacts facts = CodePointFacts::of(c);
    const CodePointFacts folded = caseless_ ? CodePointFacts::of(foldCase(c)) : CodePointFacts{};
    if (c >= kInvalidByte || isListed(c) || (caseless_ && isListed(folded.c)))
      return test(facts, folded);
    const FactsKey key{facts.categories, facts.whiteSpace, folded.categories, folded.whiteSpace};
    auto [it, added] = byFacts_.try_emplace(key);
    if (added)
      it->second = test(facts, folded);
    return it->second;
  }

private:
  using FactsKey = std::tuple<uint32_t, bool, uint32_t, bool>;

  bool isListed(char32_t c) const {
    const auto after = std::upper_bound(listed_.begin(), listed_.end(), c,
                                        [](char32_t x, const auto &range) { return x < range.first; });
    return after != listed_.begin() && std::prev(after)->second >= c;
  }

  ClassSet test(const CodePointFacts &facts, const CodePointFacts &folded) const {
    ClassSet set{};
    for (size_t k = 0; k < classes_.size(); ++k)
      if (classes_[k].contains(facts, folded))
        set[k / 64] |= uint64_t(1) << (k % 64);
    return set;
  }

  const std::vector<CharClass> &classes_;
  bool caseless_ = false;
  std::vector<std::pair<char32_t, char32_t>> listed_; // every class's ranges and folded members, merged
  std::map<FactsKey, ClassSet> byFacts_;
};

Symbols buildSymbols(const Regex &regex, ScannerTables &tables) {
  Symbols symbols;
  std::map<ClassSet, uint16_t> ids;
  const std::vector<CharClass> &classes = regex.classes();
  if (classes.size() > kMaxClasses)
    fail("the pattern has {} character classes; a scanner takes at most {}", classes.size(), kMaxClasses);
  ClassMembership membership(classes);
  // Neighbouring code points mostly share their classes: look a key up only when it changes.
  std::optional<ClassSet> previous;
  uint16_t symbol = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    const ClassSet in = membership.of(c);
    if (in != previous) {
      symbol = symbols.symbolFor(in, ids);
      previous = in;
    }
    if (tables.symbolOf.empty() || tables.symbolOf.back() != symbol) {
      tables.runStarts.push_back(c);
      tables.symbolOf.push_back(symbol);
    }
  }
  tables.invalidSymbol = symbols.symbolFor(membership.of(kInvalidByte), ids);
  tables.endSymbol = static_cast<uint16_t>(symbols.members.size()); // in no class
  symbols.members.push_back(ClassSet{});
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
    const ClassSet &in = symbols_.members[symbol];
    for (int32_t pc : items) {
      const Regex::Instruction &instruction = program_[pc];
      switch (instruction.op) {
      case Op::Match:
        accept = true;
        return true;
      case Op::Class:
        if (holds(in, static_cast<size_t>(instruction.x)))
          closure(pc + 1, next, seenNext);
        break;
      case Op::AssertNext:
      case Op::AssertNotNext:
        if (holds(in, static_cast<size_t>(instruction.x)) == (instruction.op == Op::AssertNext)) {
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
