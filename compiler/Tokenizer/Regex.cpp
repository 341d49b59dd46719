#include "Tokenizer/Regex.h"

#include "Support/Error.h"
#include "Tokenizer/Unicode.h"

#include <algorithm>

namespace needle::tokenizer {

CodePointFacts CodePointFacts::of(char32_t c) { return {c, categoryBits(c), isWhiteSpace(c)}; }

bool CharClass::rawContains(const CodePointFacts &x) const {
  for (const auto &[low, high] : ranges)
    if (x.c >= low && x.c <= high)
      return true;
  const bool valid = x.c < kInvalidByte;
  return (x.categories & categories) || (notCategories && valid && !(x.categories & notCategories)) ||
         (whiteSpace && x.whiteSpace) || (notWhiteSpace && valid && !x.whiteSpace);
}

bool CharClass::contains(const CodePointFacts &c, const CodePointFacts &folded) const {
  bool in = rawContains(c);
  // Caseless: the folded code point's class, or literals and short ranges with a member folding
  // the same way.
  if (!in && caseless)
    in = rawContains(folded) || std::binary_search(foldedMembers.begin(), foldedMembers.end(), folded.c);
  return in != negated;
}

bool CharClass::contains(char32_t c) const {
  return contains(CodePointFacts::of(c), caseless ? CodePointFacts::of(foldCase(c)) : CodePointFacts{});
}

namespace {

using Op = Regex::Instruction::Op;

/// The parsed pattern.
struct Node {
  enum class Kind { Class, Concat, Alternation, Repeat, Lookahead };
  static Node of(Kind kind, int32_t charClass = -1) {
    Node node;
    node.kind = kind;
    node.charClass = charClass;
    return node;
  }
  Kind kind = Kind::Concat;
  int32_t charClass = -1;   // Class, Lookahead
  std::vector<Node> kids;   // Concat, Alternation, Repeat (one)
  int64_t min = 0, max = 0; // Repeat; max -1: unbounded
  bool greedy = true;       // Repeat
  bool negative = false;    // Lookahead
};

constexpr int64_t kMaxRepeat = 1000;
/// Groups open at once: the parser recurses per group (real patterns nest two or three deep).
constexpr int kMaxGroupDepth = 32;
/// Instructions in a program: repeats copy their body, so nested counts multiply, and the Pike
/// VM's closure recurses along chains of them; real patterns make a few hundred.
constexpr size_t kMaxInstructions = size_t(1) << 13;

} // namespace

/// Parses a pattern into Nodes and classes, then emits the Pike VM program.
class RegexCompiler {
public:
  RegexCompiler(std::string_view pattern, std::string where, Regex &out)
      : pattern_(pattern), where_(std::move(where)), out_(out) {}

  void run() {
    Node root = alternation();
    if (pos_ != pattern_.size())
      error("unbalanced ')'");
    emit(root);
    out_.program_.push_back({Op::Match});
  }

private:
  template <typename... Args> [[noreturn]] void error(fmt::format_string<Args...> format, Args &&...args) const {
    fail("{}: regex \"{}\": at offset {}: {}", where_, pattern_, pos_,
         fmt::format(format, std::forward<Args>(args)...));
  }

  bool atEnd() const { return pos_ >= pattern_.size(); }
  char peek() const { return atEnd() ? '\0' : pattern_[pos_]; }
  bool eat(std::string_view text) {
    if (pattern_.substr(pos_, text.size()) != text)
      return false;
    pos_ += text.size();
    return true;
  }

  /// The code point at pos_ (the pattern is UTF-8).
  char32_t codePoint() {
    size_t length = 1;
    const auto lead = static_cast<unsigned char>(pattern_[pos_]);
    if (lead >= 0xF0)
      length = 4;
    else if (lead >= 0xE0)
      length = 3;
    else if (lead >= 0xC0)
      length = 2;
    const std::vector<char32_t> decoded = decodeUtf8(pattern_.substr(pos_, length));
    if (decoded.size() != 1 || decoded[0] >= kInvalidByte)
      error("invalid UTF-8");
    pos_ += length;
    return decoded[0];
  }

  int32_t addClass(CharClass c) {
    c.caseless = caseless_;
    if (c.caseless) {
      for (const auto &[low, high] : c.ranges)
        for (char32_t x = low; x <= high && x - low < 256; ++x)
          c.foldedMembers.push_back(foldCase(x));
      std::sort(c.foldedMembers.begin(), c.foldedMembers.end());
    }
    out_.classes_.push_back(std::move(c));
    return static_cast<int32_t>(out_.classes_.size() - 1);
  }
  Node classNode(CharClass c) { return Node::of(Node::Kind::Class, addClass(std::move(c))); }

  Node alternation() {
    Node alt = Node::of(Node::Kind::Alternation);
    alt.kids.push_back(concatenation());
    while (eat("|"))
      alt.kids.push_back(concatenation());
    if (alt.kids.size() == 1) {
      Node only = std::move(alt.kids[0]);
      return only;
    }
    return alt;
  }

  Node concatenation() {
    Node concat = Node::of(Node::Kind::Concat);
    while (!atEnd() && peek() != '|' && peek() != ')')
      concat.kids.push_back(repetition());
    return concat;
  }

  Node repetition() {
    Node atom = this->atom();
    int64_t min = 0, max = 0;
    if (eat("*"))
      min = 0, max = -1;
    else if (eat("+"))
      min = 1, max = -1;
    else if (eat("?"))
      min = 0, max = 1;
    else if (peek() == '{' && pos_ + 1 < pattern_.size() &&
             std::isdigit(static_cast<unsigned char>(pattern_[pos_ + 1])))
      bounds(min, max);
    else
      return atom;
    if (atom.kind == Node::Kind::Lookahead)
      error("a lookahead cannot repeat");
    Node repeat = Node::of(Node::Kind::Repeat);
    repeat.min = min, repeat.max = max;
    repeat.greedy = !eat("?");
    if (peek() == '+' || peek() == '*' || peek() == '{')
      error("possessive and stacked quantifiers are not supported");
    repeat.kids.push_back(std::move(atom));
    return repeat;
  }

  void bounds(int64_t &min, int64_t &max) {
    ++pos_; // '{'
    min = number();
    max = min;
    if (eat(","))
      max = peek() == '}' ? -1 : number();
    if (!eat("}") || (max != -1 && max < min))
      error("a bad {{n,m}} quantifier");
  }

  int64_t number() {
    int64_t value = 0;
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      error("expected a number");
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      value = value * 10 + (pattern_[pos_++] - '0');
      if (value > kMaxRepeat)
        error("a repeat count above {}", kMaxRepeat);
    }
    return value;
  }

  Node atom() {
    if (eat("("))
      return group();
    if (eat("["))
      return classNode(bracketClass());
    if (eat("."))
      return classNode({{{U'\n', U'\n'}}, 0, 0, false, false, true});
    if (peek() == '^' || peek() == '$')
      error("anchors are not supported");
    if (eat("\\"))
      return classNode(escape(false));
    const char32_t c = codePoint();
    return classNode({{{c, c}}});
  }

  Node group() {
    if (++depth_ > kMaxGroupDepth)
      error("groups nest more than {} deep", kMaxGroupDepth);
    const bool savedCaseless = caseless_;
    Node node;
    if (eat("?:")) {
      node = alternation();
    } else if (eat("?i:")) {
      caseless_ = true;
      node = alternation();
    } else if (eat("?!") || eat("?=")) {
      const bool negative = pattern_[pos_ - 1] == '!';
      Node inner = alternation();
      const Node *single = inner.kind == Node::Kind::Concat && inner.kids.size() == 1 ? &inner.kids[0] : &inner;
      if (single->kind != Node::Kind::Class)
        error("a lookahead of more than one character is not supported");
      node = Node::of(Node::Kind::Lookahead, single->charClass);
      node.negative = negative;
    } else if (peek() == '?') {
      error("group syntax (?{}...) is not supported", pattern_.substr(pos_ + 1, 1));
    } else {
      node = alternation();
    }
    caseless_ = savedCaseless;
    if (!eat(")"))
      error("missing ')'");
    --depth_;
    return node;
  }

  /// After '\': one escape, as a class (inside brackets too).
  CharClass escape(bool inBrackets) {
    if (atEnd())
      error("a pattern ends in '\\'");
    const char e = pattern_[pos_++];
    auto single = [](char32_t c) { return CharClass{{{c, c}}}; };
    switch (e) {
    case 'r':
      return single(U'\r');
    case 'n':
      return single(U'\n');
    case 't':
      return single(U'\t');
    case 'f':
      return single(U'\f');
    case 'v':
      return single(U'\v');
    case 's':
      return {{}, 0, 0, true, false};
    case 'S':
      return {{}, 0, 0, false, true};
    case 'p':
    case 'P': {
      std::string name;
      if (eat("{")) {
        const size_t close = pattern_.find('}', pos_);
        if (close == std::string_view::npos)
          error("missing '}}'");
        name = std::string(pattern_.substr(pos_, close - pos_));
        pos_ = close + 1;
      } else {
        name = std::string(1, peek());
        ++pos_;
      }
      const bool negated = name.starts_with("^") != (e == 'P');
      const uint32_t mask = categoryMask(name.starts_with("^") ? name.substr(1) : name);
      if (!mask)
        error("\\p{{{}}} is not a general category needlec knows", name);
      return negated ? CharClass{{}, 0, mask} : CharClass{{}, mask};
    }
    case 'x': {
      const bool braced = eat("{");
      const size_t digits = braced ? pattern_.find('}', pos_) - pos_ : 2;
      uint32_t value = 0;
      for (size_t i = 0; i < digits; ++i) {
        const char h = peek();
        if (!std::isxdigit(static_cast<unsigned char>(h)))
          error("a bad \\x escape");
        value = value * 16 +
                static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
        ++pos_;
      }
      if ((braced && !eat("}")) || value > 0x10FFFF)
        error("a bad \\x escape");
      return single(value);
    }
    default:
      if (std::isalnum(static_cast<unsigned char>(e)))
        error("the escape \\{} is not supported{}", e, inBrackets ? " in a class" : "");
      --pos_;
      const char32_t c = codePoint(); // escaped punctuation (or any non-alphanumeric character) is itself
      return single(c);
    }
  }

  /// After '[': a class up to its ']'.
  CharClass bracketClass() {
    CharClass out;
    out.negated = eat("^");
    bool first = true;
    while (!eat("]") || first) {
      if (first && peek() == ']') { // a ']' right after '[' or '[^' is a literal
        ++pos_;
        out.ranges.push_back({U']', U']'});
        first = false;
        continue;
      }
      first = false;
      if (atEnd())
        error("missing ']'");
      if (peek() == '[' || pattern_.substr(pos_, 2) == "&&")
        error("nested classes and class intersections are not supported");
      CharClass item = classItem();
      if (isCharacter(item) && peek() == '-' && pattern_.substr(pos_ + 1, 1) != "]") {
        ++pos_;
        const CharClass high = classItem();
        if (!isCharacter(high))
          error("a range must end in a character");
        if (high.ranges[0].first < item.ranges[0].first)
          error("a range out of order");
        item.ranges[0].second = high.ranges[0].first;
      }
      out.ranges.insert(out.ranges.end(), item.ranges.begin(), item.ranges.end());
      out.categories |= item.categories;
      out.notCategories |= item.notCategories;
      out.whiteSpace |= item.whiteSpace;
      out.notWhiteSpace |= item.notWhiteSpace;
    }
    return out;
  }

  /// One item of a bracket class: an escape or a character.
  CharClass classItem() {
    if (eat("\\"))
      return escape(true);
    const char32_t c = codePoint();
    return {{{c, c}}};
  }

  static bool isCharacter(const CharClass &c) {
    return c.ranges.size() == 1 && c.ranges[0].first == c.ranges[0].second && !c.categories && !c.notCategories &&
           !c.whiteSpace && !c.notWhiteSpace;
  }

  void emit(const Node &node) {
    auto &program = out_.program_;
    if (program.size() > kMaxInstructions)
      fail("{}: regex \"{}\": its repeats make more than {} instructions", where_, pattern_, kMaxInstructions);
    auto here = [&] { return static_cast<int32_t>(program.size()); };
    switch (node.kind) {
    case Node::Kind::Class:
      program.push_back({Op::Class, node.charClass});
      return;
    case Node::Kind::Lookahead:
      program.push_back({node.negative ? Op::AssertNotNext : Op::AssertNext, node.charClass});
      return;
    case Node::Kind::Concat:
      for (const Node &kid : node.kids)
        emit(kid);
      return;
    case Node::Kind::Alternation: {
      std::vector<size_t> jumps;
      for (size_t i = 0; i < node.kids.size(); ++i) {
        const size_t split = program.size();
        if (i + 1 < node.kids.size())
          program.push_back({Op::Split, here() + 1, 0});
        emit(node.kids[i]);
        if (i + 1 < node.kids.size()) {
          jumps.push_back(program.size());
          program.push_back({Op::Jump});
          program[split].y = here();
        }
      }
      for (size_t jump : jumps)
        program[jump].x = here();
      return;
    }
    case Node::Kind::Repeat: {
      for (int64_t i = 0; i < node.min; ++i)
        emit(node.kids[0]);
      if (node.max == -1) {
        const int32_t loop = here();
        program.push_back({Op::Split});
        emit(node.kids[0]);
        program.push_back({Op::Jump, loop});
        setSplit(program[loop], loop + 1, here(), node.greedy);
        return;
      }
      std::vector<size_t> splits;
      for (int64_t i = node.min; i < node.max; ++i) {
        splits.push_back(program.size());
        program.push_back({Op::Split});
        emit(node.kids[0]);
      }
      for (size_t split : splits)
        setSplit(program[split], static_cast<int32_t>(split) + 1, here(), node.greedy);
      return;
    }
    }
  }

  static void setSplit(Regex::Instruction &split, int32_t body, int32_t exit, bool greedy) {
    split.x = greedy ? body : exit;
    split.y = greedy ? exit : body;
  }

  std::string_view pattern_;
  std::string where_;
  Regex &out_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool caseless_ = false;
};

Regex::Regex(std::string_view pattern, std::string where) { RegexCompiler(pattern, std::move(where), *this).run(); }

size_t Regex::matchAt(const std::vector<char32_t> &text, size_t start) const {
  // A Pike VM: threads in priority order, the first to reach Match at a step wins over those
  // after it, which are cut; those before it may still match later (and longer).
  std::vector<int32_t> current, next;
  std::vector<size_t> seen(program_.size(), SIZE_MAX);
  size_t step = 0;
  auto add = [&](auto &self, std::vector<int32_t> &list, int32_t pc, size_t pos) -> void {
    if (seen[pc] == step)
      return;
    seen[pc] = step;
    const Instruction &in = program_[pc];
    const bool hasNext = pos < text.size();
    switch (in.op) {
    case Op::Jump:
      return self(self, list, in.x, pos);
    case Op::Split:
      self(self, list, in.x, pos);
      return self(self, list, in.y, pos);
    case Op::AssertNext:
      if (hasNext && classes_[in.x].contains(text[pos]))
        self(self, list, pc + 1, pos);
      return;
    case Op::AssertNotNext:
      if (!hasNext || !classes_[in.x].contains(text[pos]))
        self(self, list, pc + 1, pos);
      return;
    case Op::Class:
    case Op::Match:
      list.push_back(pc);
      return;
    }
  };
  size_t matchEnd = start;
  add(add, current, 0, start);
  for (size_t pos = start; !current.empty(); ++pos) {
    ++step;
    next.clear();
    for (int32_t pc : current) {
      const Instruction &in = program_[pc];
      if (in.op == Op::Match) {
        matchEnd = pos;
        break;
      }
      if (pos < text.size() && classes_[in.x].contains(text[pos]))
        add(add, next, pc + 1, pos + 1);
    }
    std::swap(current, next);
  }
  return matchEnd;
}

std::vector<std::pair<size_t, size_t>> Regex::splitIsolated(const std::vector<char32_t> &text) const {
  return isolatedPieces(text.size(), [&](size_t start) { return matchAt(text, start); });
}

} // namespace needle::tokenizer
