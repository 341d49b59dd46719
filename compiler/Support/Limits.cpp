#include "Support/Limits.h"

#include "Support/Error.h"

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

void checkIrNesting(std::string_view text, std::string_view source) {
  int depth = 0, line = 1;
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
    } else if (c == '}' || c == ']' || c == ')' || c == '>') {
      depth -= depth > 0;
    }
  }
}

} // namespace needle
