#include "Support/Limits.h"

#include "Support/Error.h"

#include <cctype>

namespace needle {

int64_t elementCountWithin(std::span<const int64_t> shape, int64_t limit) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim != 0 && count > limit / dim))
      return -1;
    count *= dim;
  }
  return count <= limit ? count : -1;
}

namespace {

bool startsWord(std::string_view text, size_t i, std::string_view word) {
  auto identifier = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; };
  return text.substr(i, word.size()) == word && (i == 0 || !identifier(text[i - 1])) &&
         (i + word.size() == text.size() || !identifier(text[i + word.size()]));
}

/// Whether an affine operator starts at text[i] (a '-' of "->" or "-=" was skipped before).
bool affineOperatorAt(std::string_view text, size_t i) {
  const char c = text[i];
  return c == '+' || c == '-' || c == '*' || startsWord(text, i, "floordiv") || startsWord(text, i, "ceildiv") ||
         startsWord(text, i, "mod");
}

} // namespace

void checkIrNesting(std::string_view text, std::string_view source) {
  int depth = 0, line = 1;
  int affineDepth = 0, affineOperators = 0; // the depth inside the affine map or set being read (0: none)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i], next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\n') {
      ++line;
    } else if (c == '"') { // a string literal: skip it, escapes included
      for (++i; i < text.size() && text[i] != '"'; ++i)
        i += text[i] == '\\';
    } else if (c == '/' && next == '/') { // a comment: skip to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if ((c == '-' || c == '<' || c == '>') && next == '=') {
      ++i; // "-=", "<=", ">=" (integer sets) are not brackets
    } else if (c == '-' && next == '>') {
      ++i; // "->" is an arrow, not a closing bracket
    } else if (c == '{' || c == '[' || c == '(' || c == '<') {
      if (++depth > kMaxIrNesting)
        fail("{}: line {}: brackets nest more than {} deep; needle IR never does", source, line, kMaxIrNesting);
      if (c == '<' && !affineDepth &&
          (text.substr(0, i).ends_with("affine_map") || text.substr(0, i).ends_with("affine_set")))
        affineDepth = depth, affineOperators = 0;
    } else if (c == '}' || c == ']' || c == ')' || c == '>') {
      depth -= depth > 0;
      affineDepth = depth < affineDepth ? 0 : affineDepth;
    } else if (affineDepth && affineOperatorAt(text, i) && ++affineOperators > kMaxAffineOperators) {
      fail("{}: line {}: an affine map or set with more than {} operators; needle IR never has one", source, line,
           kMaxAffineOperators);
    }
  }
}

} // namespace needle
