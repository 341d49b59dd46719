#include "Quant/Scheme.h"

#include "Support/Error.h"
#include "Support/Text.h"

#include <charconv>

namespace needle {

namespace {

bool prefixMatches(std::string_view prefix, std::string_view name) {
  return name.starts_with(prefix) && (name.size() == prefix.size() || name[prefix.size()] == '.');
}

} // namespace

int QuantScheme::bitsFor(std::string_view kind, std::string_view name) const {
  int bits = defaultBits;
  size_t longest = 0;
  for (const auto &[prefix, ruleBits] : rules) {
    if ((prefix == kind || prefixMatches(prefix, name)) && prefix.size() > longest) {
      longest = prefix.size();
      bits = ruleBits;
    }
  }
  return bits;
}

QuantScheme parseScheme(std::string_view text, int64_t groupSize, std::string_view source) {
  QuantScheme scheme;
  scheme.text = std::string(text);
  scheme.groupSize = groupSize;
  if (groupSize != cq::kGroup)
    fail("{}: quantization.group_size: {} is not supported (CQ groups are {})", source, groupSize, cq::kGroup);
  if (text == "none")
    return scheme;
  for (std::string_view item : splitList(text)) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      fail("{}: quantization.scheme: \"{}\" is not prefix=bits", source, item);
    std::string_view prefix = item.substr(0, eq), bitsText = item.substr(eq + 1);
    int bits = 0;
    auto [ptr, ec] = std::from_chars(bitsText.data(), bitsText.data() + bitsText.size(), bits);
    if (ec != std::errc() || ptr != bitsText.data() + bitsText.size())
      fail("{}: quantization.scheme: \"{}\" has no whole number of bits", source, item);
    if (bits < 2 || bits > 4)
      fail("{}: quantization.scheme: \"{}\": {} bits is not supported (2, 3 or 4)", source, item, bits);
    if (prefix == "default") {
      if (scheme.defaultBits)
        fail("{}: quantization.scheme: default is given twice", source);
      scheme.defaultBits = bits;
    } else {
      for (const auto &rule : scheme.rules)
        if (rule.first == prefix)
          fail("{}: quantization.scheme: \"{}\" is given twice", source, prefix);
      scheme.rules.emplace_back(prefix, bits);
    }
  }
  if (!scheme.defaultBits)
    fail("{}: quantization.scheme: \"{}\" has no default=bits (or write \"none\")", source, text);
  return scheme;
}

} // namespace needle
