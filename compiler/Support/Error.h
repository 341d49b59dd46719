// User-facing errors. Every message names the file and the field at fault; the tools print it
// as "<tool>: error: <message>" and exit with status 1.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace needle {

/// `text` as one short line of printable ASCII: control characters (a NUL from a hostile key
/// included) and every byte from 0x7F on escaped as \xNN, and the middle of an overlong text (a
/// huge quoted value or shape) elided.
std::string oneLine(std::string_view text);

class Error : public std::runtime_error {
public:
  explicit Error(std::string_view message) : std::runtime_error(oneLine(message)) {}
};

template <typename... Args> [[noreturn]] void fail(fmt::format_string<Args...> format, Args &&...args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

} // namespace needle
