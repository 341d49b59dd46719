#include "Calls/Language.h"

namespace needle::calls {

LangPtr byteSet(const std::bitset<256> &bytes) {
  auto lang = std::make_shared<Lang>();
  lang->kind = Lang::Kind::Byte;
  lang->bytes = bytes;
  return lang;
}

LangPtr byteRange(uint8_t first, uint8_t last) {
  std::bitset<256> bytes;
  for (unsigned b = first; b <= last; ++b)
    bytes.set(b);
  return byteSet(bytes);
}

LangPtr literal(std::string_view text) {
  std::vector<LangPtr> parts;
  for (const char c : text)
    parts.push_back(byteRange(uint8_t(c), uint8_t(c)));
  return seq(std::move(parts));
}

LangPtr seq(std::vector<LangPtr> parts) {
  if (parts.size() == 1)
    return parts.front();
  auto lang = std::make_shared<Lang>();
  lang->kind = Lang::Kind::Seq;
  lang->parts = std::move(parts);
  return lang;
}

LangPtr alt(std::vector<LangPtr> parts) {
  if (parts.size() == 1)
    return parts.front();
  auto lang = std::make_shared<Lang>();
  lang->kind = Lang::Kind::Alt;
  lang->parts = std::move(parts);
  return lang;
}

LangPtr repeat(LangPtr item, uint64_t min, uint64_t max, LangPtr separator) {
  auto lang = std::make_shared<Lang>();
  lang->kind = Lang::Kind::Repeat;
  lang->parts = {std::move(item)};
  lang->min = min;
  lang->max = max;
  lang->separator = std::move(separator);
  return lang;
}

LangPtr members(std::vector<LangPtr> parts, std::vector<bool> required, LangPtr separator) {
  auto lang = std::make_shared<Lang>();
  lang->kind = Lang::Kind::Members;
  lang->parts = std::move(parts);
  lang->required = std::move(required);
  lang->separator = std::move(separator);
  return lang;
}

} // namespace needle::calls
