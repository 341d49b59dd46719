// A read-only image as the runtime reads it (the tokenizer's, the tool-call automaton's): a
// header struct, then arrays at offsets from the image's start, each aligned for its elements.
// Every target is little-endian, as this machine, so arrays are written raw.
#pragma once

#include "Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace needle {

template <typename Header> class ImageWriter {
public:
  /// `what` names the image in errors ("the tokenizer's tables").
  explicit ImageWriter(std::string what) : bytes_(sizeof(Header)), what_(std::move(what)) {}

  /// Appends `values` and returns their offset. Each array at its elements' alignment, 4 at
  /// least; one with the bytes of an earlier array shares it only where that alignment holds.
  template <typename Range> uint32_t array(const Range &values) {
    const auto *data = reinterpret_cast<const char *>(std::data(values));
    std::string content(data, std::size(values) * sizeof(*std::data(values)));
    const size_t align = std::max<size_t>(4, alignof(std::remove_cvref_t<decltype(*std::data(values))>));
    if (const auto written = offsets_.find(content); written != offsets_.end() && written->second % align == 0)
      return written->second;
    bytes_.resize((bytes_.size() + align - 1) / align * align);
    const size_t offset = bytes_.size();
    bytes_.insert(bytes_.end(), content.begin(), content.end());
    if (bytes_.size() > UINT32_MAX)
      fail("{} take {} bytes, more than 4 GiB", what_, bytes_.size());
    offsets_.emplace(std::move(content), static_cast<uint32_t>(offset));
    return static_cast<uint32_t>(offset);
  }

  std::vector<uint8_t> finish(const Header &header) {
    std::memcpy(bytes_.data(), &header, sizeof header);
    return std::move(bytes_);
  }

private:
  std::vector<uint8_t> bytes_;
  std::string what_;
  std::map<std::string, uint32_t> offsets_; // each array written, by its bytes
};

} // namespace needle
