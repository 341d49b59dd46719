// User-facing errors. Every message names the file and the field at fault; the tools print it
// as "<tool>: error: <message>" and exit with status 1.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace needle {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

template <typename... Args> [[noreturn]] void fail(fmt::format_string<Args...> format, Args &&...args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

} // namespace needle
