#include "Support/Json.h"

#include "Support/Error.h"

#include <charconv>
#include <cmath>
#include <unordered_set>

namespace needle::json {

const Value *Value::find(std::string_view key) const {
  for (const auto &[name, value] : members)
    if (name == key)
      return &value;
  return nullptr;
}

const char *Value::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
  Parser(std::string_view text, std::string_view source, size_t maxValues)
      : text_(text), source_(source), maxValues_(maxValues) {}

  Value parseDocument() {
    Value value = parseValue(0);
    skipSpace();
    if (pos_ != text_.size())
      error("unexpected text after the JSON value");
    return value;
  }

private:
  [[noreturn]] void error(std::string_view problem) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    if (pos_ >= text_.size() && !problem.starts_with("unexpected end"))
      fail("{}: line {}, column {}: unexpected end of input ({})", source_, line, column, problem);
    fail("{}: line {}, column {}: {}", source_, line, column, problem);
  }

  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void expect(char c) {
    if (peek() != c)
      error(fmt::format("expected '{}'", c));
    ++pos_;
  }

  void expectWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      error("invalid literal");
    pos_ += word.size();
  }

  Value parseValue(int depth) {
    if (depth > kMaxDepth)
      error("nesting is too deep");
    if (++values_ > maxValues_)
      error(fmt::format("more than {} values", maxValues_));
    skipSpace();
    Value value;
    switch (peek()) {
    case '{':
      parseObject(value, depth);
      break;
    case '[':
      parseArray(value, depth);
      break;
    case '"':
      value.kind = Value::Kind::String;
      value.string = parseString();
      break;
    case 't':
      expectWord("true");
      value.kind = Value::Kind::Bool;
      value.boolean = true;
      break;
    case 'f':
      expectWord("false");
      value.kind = Value::Kind::Bool;
      break;
    case 'n':
      expectWord("null");
      break;
    case '\0':
      if (pos_ >= text_.size())
        error("unexpected end of input");
      error("unexpected character");
    default:
      parseNumber(value);
      break;
    }
    return value;
  }

  void parseObject(Value &value, int depth) {
    value.kind = Value::Kind::Object;
    expect('{');
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    std::unordered_set<std::string> keys; // a linear search per key would be quadratic
    while (true) {
      skipSpace();
      if (peek() != '"')
        error("expected a string key");
      size_t keyPos = pos_;
      std::string key = parseString();
      if (!keys.insert(key).second) {
        pos_ = keyPos;
        error(fmt::format("duplicate key \"{}\"", key));
      }
      skipSpace();
      expect(':');
      Value member = parseValue(depth + 1);
      value.members.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      value.members.shrink_to_fit(); // memory in proportion to the text: no growth slack kept
      return;
    }
  }

  void parseArray(Value &value, int depth) {
    value.kind = Value::Kind::Array;
    expect('[');
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    while (true) {
      value.items.push_back(parseValue(depth + 1));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      value.items.shrink_to_fit();
      return;
    }
  }

  unsigned parseHex4() {
    if (pos_ + 4 > text_.size())
      error("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= c - '0';
      else if (c >= 'a' && c <= 'f')
        code |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        code |= c - 'A' + 10;
      else
        error("invalid \\u escape");
    }
    return code;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  void parseEscape(std::string &out) {
    char c = text_[pos_++];
    switch (c) {
    case '"':
      out += '"';
      break;
    case '\\':
      out += '\\';
      break;
    case '/':
      out += '/';
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'u': {
      unsigned code = parseHex4();
      if (code >= 0xD800 && code < 0xDC00) {
        if (text_.substr(pos_, 2) != "\\u")
          error("unpaired surrogate in \\u escape");
        pos_ += 2;
        unsigned low = parseHex4();
        if (low < 0xDC00 || low >= 0xE000)
          error("invalid surrogate pair in \\u escape");
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      } else if (code >= 0xDC00 && code < 0xE000) {
        error("unpaired surrogate in \\u escape");
      }
      appendUtf8(out, code);
      break;
    }
    default:
      --pos_;
      error("invalid escape");
    }
  }

  std::string parseString() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size())
        error("unterminated string");
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        error("control character in string");
      }
      if (c == '\\') {
        if (pos_ >= text_.size())
          error("unterminated string");
        parseEscape(out);
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        --pos_;
        const size_t length = utf8Length(text_.substr(pos_));
        if (!length)
          error("invalid UTF-8 in a string (JSON text is UTF-8, RFC 8259)");
        out += text_.substr(pos_, length);
        pos_ += length;
      } else {
        out += c;
      }
    }
  }

  /// The length of the well-formed UTF-8 sequence `bytes` starts with (RFC 3629: no overlong
  /// forms, no surrogates, nothing past U+10FFFF), or 0.
  static size_t utf8Length(std::string_view bytes) {
    auto byte = [&](size_t i) { return i < bytes.size() ? static_cast<unsigned char>(bytes[i]) : 0u; };
    const unsigned lead = byte(0);
    // The second byte's range depends on the lead (Unicode's table 3-7); the rest are 80..BF.
    unsigned length = 0, low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF)
      length = 2;
    else if (lead >= 0xE0 && lead <= 0xEF)
      length = 3, low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
    else if (lead >= 0xF0 && lead <= 0xF4)
      length = 4, low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
    if (!length || byte(1) < low || byte(1) > high)
      return 0;
    for (unsigned i = 2; i < length; ++i)
      if (byte(i) < 0x80 || byte(i) > 0xBF)
        return 0;
    return length;
  }

  void parseNumber(Value &value) {
    size_t start = pos_;
    bool integral = true;
    if (peek() == '-')
      ++pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
      if (pos_ == first)
        error(start == first ? "unexpected character" : "invalid number");
    };
    if (peek() == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (peek() == '.') {
      ++pos_;
      integral = false;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      integral = false;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      digits();
    }
    std::string_view token = text_.substr(start, pos_ - start);
    value.kind = Value::Kind::Number;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value.number);
    if (ec != std::errc() || !std::isfinite(value.number)) {
      pos_ = start;
      error("number out of range");
    }
    if (integral) {
      auto [iend, iec] = std::from_chars(token.data(), token.data() + token.size(), value.integer);
      value.isInteger = iec == std::errc();
    }
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
  size_t maxValues_;
  size_t values_ = 0;
};

} // namespace

Value parse(std::string_view text, std::string_view source, size_t maxValues) {
  return Parser(text, source, maxValues).parseDocument();
}

void appendQuoted(std::string &out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      else
        out += c;
    }
  }
  out += '"';
}

std::string serialize(const Value &value) {
  switch (value.kind) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return value.boolean ? "true" : "false";
  case Value::Kind::Number:
    return value.isInteger ? std::to_string(value.integer) : formatNumber(value.number);
  case Value::Kind::String: {
    std::string out;
    appendQuoted(out, value.string);
    return out;
  }
  case Value::Kind::Array: {
    std::string out = "[";
    for (size_t i = 0; i < value.items.size(); ++i)
      out += (i ? "," : "") + serialize(value.items[i]);
    return out + "]";
  }
  case Value::Kind::Object: {
    std::string out = "{";
    for (size_t i = 0; i < value.members.size(); ++i) {
      out += i ? "," : "";
      appendQuoted(out, value.members[i].first);
      out += ":" + serialize(value.members[i].second);
    }
    return out + "}";
  }
  }
  return "null";
}

std::string formatNumber(double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

} // namespace needle::json
