// Small text helpers shared by the parsers of command-line and metadata lists.
#pragma once

#include <string_view>
#include <vector>

namespace needle {

/// "a,b,,c" -> {"a", "b", "", "c"}; an empty text gives one empty item.
inline std::vector<std::string_view> splitList(std::string_view text, char separator = ',') {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    items.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos)
      return items;
    start = end + 1;
  }
}

} // namespace needle
