#include "Calls/ByteAutomaton.h"

#include "Support/Error.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace needle::calls {
namespace {

/// A nondeterministic automaton with epsilon moves; each byte move takes one of `sets`.
struct Nfa {
  struct State {
    std::vector<uint32_t> epsilon;
    std::vector<std::pair<uint32_t, uint32_t>> moves; // (set, target)
  };
  std::vector<State> states;
  std::vector<std::bitset<256>> sets;
};

class NfaBuilder {
public:
  NfaBuilder(Nfa &nfa, const std::string &source) : nfa_(nfa), source_(source) {}

  uint32_t add() {
    if (nfa_.states.size() >= kMaxByteStates * size_t(4))
      fail("{}: the call language needs more than {} automaton states", source_, kMaxByteStates * size_t(4));
    nfa_.states.emplace_back();
    return uint32_t(nfa_.states.size() - 1);
  }

  /// The entry of `lang` followed by state `next`.
  uint32_t build(const LangPtr &lang, uint32_t next) {
    const auto key = std::make_pair(lang.get(), next);
    if (const auto built = built_.find(key); built != built_.end())
      return built->second;
    const uint32_t entry = make(*lang, next);
    built_.emplace(key, entry);
    return entry;
  }

private:
  uint32_t make(const Lang &lang, uint32_t next) {
    switch (lang.kind) {
    case Lang::Kind::Byte: {
      const uint32_t s = add();
      nfa_.states[s].moves.emplace_back(set(lang.bytes), next);
      return s;
    }
    case Lang::Kind::Seq:
      for (auto part = lang.parts.rbegin(); part != lang.parts.rend(); ++part)
        next = build(*part, next);
      return next;
    case Lang::Kind::Alt: {
      const uint32_t s = add();
      for (const LangPtr &part : lang.parts) {
        const uint32_t entry = build(part, next);
        nfa_.states[s].epsilon.push_back(entry);
      }
      return s;
    }
    case Lang::Kind::Repeat:
      return repeat(lang, next);
    case Lang::Kind::Members:
      return members(lang, next);
    }
    return next;
  }

  /// after[k]: the entry once k items are written; the last one loops when there is no maximum.
  uint32_t repeat(const Lang &lang, uint32_t next) {
    const LangPtr &item = lang.parts.front();
    const bool unbounded = lang.max == kUnbounded;
    const uint64_t top = unbounded ? std::max<uint64_t>(lang.min, 1) : lang.max;
    std::vector<uint32_t> after(top + 1);
    if (unbounded) {
      const uint32_t loop = add();
      const uint32_t more = separated(item, loop, lang.separator);
      nfa_.states[loop].epsilon = {next, more};
      after[top] = loop;
    } else {
      after[top] = next;
    }
    for (uint64_t k = top; k-- > 0;) {
      const uint32_t more = k > 0 ? separated(item, after[k + 1], lang.separator) : build(item, after[k + 1]);
      if (k < lang.min) {
        after[k] = more;
        continue;
      }
      const uint32_t s = add();
      nfa_.states[s].epsilon = {more, next};
      after[k] = s;
    }
    return after[0];
  }

  uint32_t separated(const LangPtr &item, uint32_t next, const LangPtr &separator) {
    const uint32_t entry = build(item, next);
    return separator ? build(separator, entry) : entry;
  }

  /// entry[i][any]: the entry with properties i.. to go, `any` one of them written already.
  uint32_t members(const Lang &lang, uint32_t next) {
    const size_t n = lang.parts.size();
    std::vector<std::array<uint32_t, 2>> entry(n + 1, {next, next});
    for (size_t i = n; i-- > 0;) {
      const uint32_t take = build(lang.parts[i], entry[i + 1][1]);
      for (const int any : {0, 1}) {
        const uint32_t written = any && lang.separator ? build(lang.separator, take) : take;
        if (lang.required[i]) {
          entry[i][any] = written;
          continue;
        }
        const uint32_t s = add();
        nfa_.states[s].epsilon = {written, entry[i + 1][any]};
        entry[i][any] = s;
      }
    }
    return entry[0][0];
  }

  uint32_t set(const std::bitset<256> &bytes) {
    const auto [at, added] = setIds_.emplace(bytes.to_string(), uint32_t(nfa_.sets.size()));
    if (added)
      nfa_.sets.push_back(bytes);
    return at->second;
  }

  Nfa &nfa_;
  const std::string &source_;
  std::map<std::pair<const Lang *, uint32_t>, uint32_t> built_;
  std::unordered_map<std::string, uint32_t> setIds_;
};

/// Classes of bytes that every set of the automaton holds all or none of.
uint32_t byteClasses(const Nfa &nfa, std::array<uint8_t, 256> &classOf) {
  std::array<uint32_t, 256> current{};
  uint32_t count = 1;
  for (const std::bitset<256> &set : nfa.sets) {
    std::map<std::pair<uint32_t, bool>, uint32_t> refined;
    for (unsigned b = 0; b < 256; ++b)
      current[b] = refined.emplace(std::make_pair(current[b], bool(set[b])), uint32_t(refined.size())).first->second;
    count = uint32_t(refined.size());
  }
  for (unsigned b = 0; b < 256; ++b)
    classOf[b] = uint8_t(current[b]);
  return count;
}

std::vector<uint32_t> closure(const Nfa &nfa, std::vector<uint32_t> states) {
  std::vector<uint8_t> seen(nfa.states.size(), 0);
  std::vector<uint32_t> stack = states;
  states.clear();
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    if (seen[s])
      continue;
    seen[s] = 1;
    states.push_back(s);
    for (const uint32_t t : nfa.states[s].epsilon)
      stack.push_back(t);
  }
  std::sort(states.begin(), states.end());
  return states;
}

/// Subset construction: each state of the result is a set of the NFA's states.
ByteAutomaton determinize(const Nfa &nfa, uint32_t entry, uint32_t final, const std::string &source) {
  ByteAutomaton dfa;
  dfa.classes = byteClasses(nfa, dfa.classOf);
  std::vector<std::vector<uint32_t>> classesOfSet(nfa.sets.size());
  for (size_t i = 0; i < nfa.sets.size(); ++i)
    for (uint32_t c = 0; c < dfa.classes; ++c)
      if (nfa.sets[i][size_t(std::find(dfa.classOf.begin(), dfa.classOf.end(), c) - dfa.classOf.begin())])
        classesOfSet[i].push_back(c);
  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<std::vector<uint32_t>> subsets = {closure(nfa, {entry})};
  ids.emplace(subsets.front(), 0);
  for (uint32_t d = 0; d < subsets.size(); ++d) {
    std::vector<std::vector<uint32_t>> moves(dfa.classes);
    for (const uint32_t s : subsets[d])
      for (const auto &[set, target] : nfa.states[s].moves)
        for (const uint32_t c : classesOfSet[set])
          moves[c].push_back(target);
    dfa.accepting.push_back(std::binary_search(subsets[d].begin(), subsets[d].end(), final));
    for (uint32_t c = 0; c < dfa.classes; ++c) {
      if (moves[c].empty()) {
        dfa.next.push_back(-1);
        continue;
      }
      std::vector<uint32_t> target = closure(nfa, std::move(moves[c]));
      const auto [at, added] = ids.emplace(target, uint32_t(subsets.size()));
      if (added) {
        if (subsets.size() >= kMaxByteStates)
          fail("{}: the call language needs more than {} automaton states", source, kMaxByteStates);
        subsets.push_back(std::move(target));
      }
      dfa.next.push_back(int32_t(at->second));
    }
  }
  dfa.states = uint32_t(subsets.size());
  return dfa;
}

/// Moore's refinement: states that no byte string tells apart become one; blocks are numbered
/// by their first state, so the start stays state 0.
ByteAutomaton minimize(const ByteAutomaton &dfa) {
  std::vector<uint32_t> block(dfa.accepting.begin(), dfa.accepting.end());
  for (uint32_t count = 0;;) {
    std::map<std::vector<int64_t>, uint32_t> signatures;
    std::vector<uint32_t> refined(dfa.states);
    for (uint32_t s = 0; s < dfa.states; ++s) {
      std::vector<int64_t> signature = {block[s]};
      for (uint32_t c = 0; c < dfa.classes; ++c) {
        const int32_t t = dfa.next[size_t(s) * dfa.classes + c];
        signature.push_back(t < 0 ? -1 : int64_t(block[uint32_t(t)]));
      }
      refined[s] = signatures.emplace(std::move(signature), uint32_t(signatures.size())).first->second;
    }
    block = std::move(refined);
    if (signatures.size() == count)
      break;
    count = uint32_t(signatures.size());
  }
  // Renumber by first appearance (the refinement's ids follow signature order, not states').
  std::vector<int64_t> number(dfa.states, -1);
  ByteAutomaton out;
  out.classOf = dfa.classOf;
  out.classes = dfa.classes;
  std::vector<uint32_t> first;
  for (uint32_t s = 0; s < dfa.states; ++s)
    if (number[block[s]] < 0) {
      number[block[s]] = int64_t(first.size());
      first.push_back(s);
    }
  out.states = uint32_t(first.size());
  for (const uint32_t s : first) {
    out.accepting.push_back(dfa.accepting[s]);
    for (uint32_t c = 0; c < dfa.classes; ++c) {
      const int32_t t = dfa.next[size_t(s) * dfa.classes + c];
      out.next.push_back(t < 0 ? -1 : int32_t(number[block[uint32_t(t)]]));
    }
  }
  return out;
}

} // namespace

ByteAutomaton buildByteAutomaton(const LangPtr &lang, const std::string &source) {
  Nfa nfa;
  NfaBuilder builder(nfa, source);
  const uint32_t final = builder.add();
  const uint32_t entry = builder.build(lang, final);
  return minimize(determinize(nfa, entry, final, source));
}

std::optional<std::string> commonText(const ByteAutomaton &a, const ByteAutomaton &b) {
  // A search over pairs of states from the two starts, remembering how each pair was reached.
  std::map<std::pair<int32_t, int32_t>, std::pair<std::pair<int32_t, int32_t>, uint8_t>> from;
  std::vector<std::pair<int32_t, int32_t>> queue = {{0, 0}};
  from.emplace(queue.front(), std::make_pair(std::make_pair(-1, -1), uint8_t(0)));
  for (size_t i = 0; i < queue.size(); ++i) {
    const auto [x, y] = queue[i];
    if (a.accepting[uint32_t(x)] && b.accepting[uint32_t(y)]) {
      std::string text;
      for (auto at = queue[i]; at.first >= 0 && at != std::make_pair(0, 0); at = from[at].first)
        text.insert(text.begin(), char(from[at].second));
      return text;
    }
    for (unsigned byte = 0; byte < 256; ++byte) {
      const std::pair<int32_t, int32_t> next = {a.step(uint32_t(x), uint8_t(byte)), b.step(uint32_t(y), uint8_t(byte))};
      if (next.first >= 0 && next.second >= 0 && from.emplace(next, std::make_pair(queue[i], uint8_t(byte))).second)
        queue.push_back(next);
    }
  }
  return std::nullopt;
}

} // namespace needle::calls
