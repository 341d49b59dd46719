#include "Tokenizer/Unicode.h"

#include "Support/Error.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <unordered_map>

namespace needle::tokenizer {

namespace {

/// The length of the valid UTF-8 sequence at text[i], or 0.
size_t sequenceLength(std::string_view text, size_t i, char32_t &c) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = lead < 0x80                   ? 1
                  : lead >= 0xC2 && lead < 0xE0 ? 2
                  : lead >= 0xE0 && lead < 0xF0 ? 3
                  : lead >= 0xF0 && lead < 0xF5 ? 4
                                                : 0;
  if (length == 0 || i + length > text.size())
    return 0;
  c = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
    c = c << 6 | (byte(i + k) & 0x3F);
  }
  const bool overlong = (length == 3 && c < 0x800) || (length == 4 && c < 0x10000);
  return overlong || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? 0 : length;
}

} // namespace

std::vector<char32_t> decodeUtf8(std::string_view text) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < text.size();) {
    char32_t c = 0;
    const size_t length = sequenceLength(text, i, c);
    out.push_back(length ? c : kInvalidByte + static_cast<unsigned char>(text[i]));
    i += length ? length : 1;
  }
  return out;
}

void appendUtf8(std::string &out, char32_t c) {
  if (c >= kInvalidByte) {
    out += static_cast<char>(c - kInvalidByte);
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | c >> 6);
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | c >> 12);
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | c >> 18);
    out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

size_t utf8Length(char32_t c) { return c >= kInvalidByte || c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

std::string encodeUtf8(const std::vector<char32_t> &codePoints, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i)
    appendUtf8(out, codePoints[i]);
  return out;
}

std::string lossyUtf8(std::string_view bytes) {
  std::string out;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char lead = byte(i);
    // The continuation bytes a lead needs, and the range its first one must fall in.
    size_t needed = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead < 0x80) {
      out += static_cast<char>(lead);
      ++i;
      continue;
    }
    if (lead >= 0xC2 && lead <= 0xDF)
      needed = 1;
    else if (lead >= 0xE0 && lead <= 0xEF)
      needed = 2, low = lead == 0xE0 ? 0xA0 : 0x80, high = lead == 0xED ? 0x9F : 0xBF;
    else if (lead >= 0xF0 && lead <= 0xF4)
      needed = 3, low = lead == 0xF0 ? 0x90 : 0x80, high = lead == 0xF4 ? 0x8F : 0xBF;
    size_t k = 1;
    for (; k <= needed && i + k < bytes.size(); ++k) {
      const unsigned char c = byte(i + k);
      if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF))
        break;
    }
    if (needed && k == needed + 1)
      out.append(bytes.substr(i, k));
    else
      appendUtf8(out, 0xFFFD); // the lead and the valid continuations before the break
    i += k;
  }
  return out;
}

int byteLevelByte(char32_t c) {
  static const std::unordered_map<char32_t, int> bytes = [] {
    std::unordered_map<char32_t, int> out;
    for (int b = 0; b < 256; ++b)
      out[byteLevelAlphabet()[b]] = b;
    return out;
  }();
  auto it = bytes.find(c);
  return it == bytes.end() ? -1 : it->second;
}

const std::array<char32_t, 256> &byteLevelAlphabet() {
  static const std::array<char32_t, 256> alphabet = [] {
    std::array<char32_t, 256> out{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      out[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return out;
  }();
  return alphabet;
}

uint32_t categoryMask(std::string_view name) {
  const int32_t mask = u_getPropertyValueEnum(UCHAR_GENERAL_CATEGORY_MASK, std::string(name).c_str());
  return mask == UCHAR_INVALID_CODE ? 0 : static_cast<uint32_t>(mask);
}

uint32_t categoryBits(char32_t c) {
  return c < kInvalidByte ? static_cast<uint32_t>(U_GET_GC_MASK(static_cast<UChar32>(c))) : 0;
}

bool inCategories(char32_t c, uint32_t mask) {
  return c < kInvalidByte && (U_GET_GC_MASK(static_cast<UChar32>(c)) & mask) != 0;
}

bool isWhiteSpace(char32_t c) {
  return c < kInvalidByte && u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool isWordCharacter(char32_t c) {
  if (c >= kInvalidByte)
    return false;
  const UChar32 point = static_cast<UChar32>(c);
  return u_hasBinaryProperty(point, UCHAR_ALPHABETIC) || u_hasBinaryProperty(point, UCHAR_JOIN_CONTROL) ||
         (U_GET_GC_MASK(point) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

char32_t foldCase(char32_t c) {
  return c < kInvalidByte ? static_cast<char32_t>(u_foldCase(static_cast<UChar32>(c), U_FOLD_CASE_DEFAULT)) : c;
}

namespace {

const icu::Normalizer2 &normalizer(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2 *n =
      form == NormalForm::Nfc ? icu::Normalizer2::getNFCInstance(status) : icu::Normalizer2::getNFKCInstance(status);
  if (U_FAILURE(status))
    fail("internal: ICU has no normalization data: {}", u_errorName(status));
  return *n;
}

std::vector<char32_t> codePoints(const icu::UnicodeString &s) {
  std::vector<char32_t> out;
  for (int32_t i = 0; i < s.length(); i = s.moveIndex32(i, 1))
    out.push_back(static_cast<char32_t>(s.char32At(i)));
  return out;
}

std::string normalize(std::string_view text, const icu::Normalizer2 &form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString normalized =
      form.normalize(icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), text.size())), status);
  if (U_FAILURE(status))
    fail("internal: ICU cannot normalize a text: {}", u_errorName(status));
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

bool isHangulSyllable(char32_t c) { return c >= 0xAC00 && c < 0xAC00 + 11172; }

NormalizationData buildNormalizationData(NormalForm form) {
  const icu::Normalizer2 &forward = normalizer(form), &canonical = normalizer(NormalForm::Nfc);
  NormalizationData data;
  data.quickBelow = 0x110000;
  for (char32_t c = 0; c < 0x110000; ++c) {
    const uint8_t cls = combiningClass(c);
    if (data.classRuns.empty() || data.classRuns.back().second != cls)
      data.classRuns.push_back({c, cls});
    icu::UnicodeString mapping;
    const UChar32 point = static_cast<UChar32>(c);
    const bool decomposes = !isHangulSyllable(c) && forward.getDecomposition(point, mapping);
    if (decomposes)
      data.decompositions.push_back({c, codePoints(mapping)});
    if ((decomposes || cls) && data.quickBelow == 0x110000)
      data.quickBelow = c;
    if (!isHangulSyllable(c) && canonical.getRawDecomposition(point, mapping)) {
      const std::vector<char32_t> pair = codePoints(mapping);
      if (pair.size() == 2 &&
          canonical.composePair(static_cast<UChar32>(pair[0]), static_cast<UChar32>(pair[1])) == point)
        data.compositions.push_back({pair[0], pair[1], c});
    }
  }
  std::sort(data.compositions.begin(), data.compositions.end(),
            [](const auto &a, const auto &b) { return std::pair(a.first, a.second) < std::pair(b.first, b.second); });
  return data;
}

} // namespace

uint8_t combiningClass(char32_t c) { return c < kInvalidByte ? u_getCombiningClass(static_cast<UChar32>(c)) : 0; }

const NormalizationData &normalizationData(NormalForm form) {
  if (form == NormalForm::Nfc) {
    static const NormalizationData nfc = buildNormalizationData(NormalForm::Nfc);
    return nfc;
  }
  static const NormalizationData nfkc = buildNormalizationData(NormalForm::Nfkc);
  return nfkc;
}

std::string normalizeText(std::string_view text, NormalForm form) {
  const std::vector<char32_t> points = decodeUtf8(text);
  std::string out;
  for (size_t begin = 0; begin < points.size();) {
    size_t end = begin;
    while (end < points.size() && (points[end] >= kInvalidByte) == (points[begin] >= kInvalidByte))
      ++end;
    const std::string run = encodeUtf8(points, begin, end);
    out += points[begin] >= kInvalidByte ? run : normalize(run, normalizer(form));
    begin = end;
  }
  return out;
}

} // namespace needle::tokenizer
