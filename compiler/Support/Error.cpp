#include "Support/Error.h"

namespace needle {

namespace {

// An error line holds a path, a field and a problem; quoted values past this are elided.
constexpr size_t kMaxLine = 600;
constexpr size_t kKeptHead = 400, kKeptTail = 150;

} // namespace

std::string oneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    // Controls (C0, DEL) and every byte from 0x80 on: a UTF-8 C1 control (NEL, U+0085) or line
    // separator would break the line in some terminals, and invalid UTF-8 garbles it.
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  if (out.size() <= kMaxLine)
    return out;
  const size_t elided = out.size() - kKeptHead - kKeptTail;
  return fmt::format("{}[... {} characters ...]{}", out.substr(0, kKeptHead), elided,
                     out.substr(out.size() - kKeptTail));
}

} // namespace needle
