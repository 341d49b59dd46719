// The Unicode facts the tokenizer needs at compile time, from Debian's ICU (libicu, Unicode
// 15.0 in Debian 12): general categories, white space, simple case folding, NFC/NFKC. Used by
// needlec only; a compiled tokenizer carries the tables it needs. Plain C++, no MLIR.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace needle::tokenizer {

/// A text as code points. A byte that does not begin a valid UTF-8 sequence becomes one code
/// point of its own, kInvalidByte + the byte: no property holds for it, and it keeps its byte
/// (c-interface.md, "Text: the compiled tokenizer").
inline constexpr char32_t kInvalidByte = 0x110000;
std::vector<char32_t> decodeUtf8(std::string_view text);
/// The bytes of code points from decodeUtf8 (invalid bytes as they were).
std::string encodeUtf8(const std::vector<char32_t> &codePoints, size_t begin, size_t end);
void appendUtf8(std::string &out, char32_t c);
/// The bytes appendUtf8 writes for c.
size_t utf8Length(char32_t c);
/// `bytes` as valid UTF-8: each maximal invalid subpart becomes U+FFFD (WHATWG's decoder).
std::string lossyUtf8(std::string_view bytes);

/// GPT-2's byte-level alphabet, by byte: printable bytes stand for themselves, the other 68 for
/// the code points from 256 up, in byte order. Byte-level vocabularies spell bytes with it.
const std::array<char32_t, 256> &byteLevelAlphabet();
/// The byte that `c` spells in that alphabet, or -1.
int byteLevelByte(char32_t c);

/// The mask of a general category or category group name ("L", "Lu", "N", "P", ...) for
/// inCategories, or 0 when the name is none.
uint32_t categoryMask(std::string_view name);
bool inCategories(char32_t c, uint32_t mask);
/// The categoryMask() bit of c's general category; 0 for an invalid byte.
uint32_t categoryBits(char32_t c);
/// Unicode's White_Space property (what Oniguruma's \s matches).
bool isWhiteSpace(char32_t c);
/// A word character as Rust's regex \w (Unicode's UTS #18): Alphabetic, a mark, a decimal digit,
/// a connector punctuation, or Join_Control.
bool isWordCharacter(char32_t c);
/// Simple case folding (what a case-insensitive match compares).
char32_t foldCase(char32_t c);

enum class NormalForm { Nfc, Nfkc };
/// `text` in Normalization Form C or KC: each run of valid UTF-8 normalized, invalid bytes kept
/// (nothing composes across them).
std::string normalizeText(std::string_view text, NormalForm form);

/// What a compiled NFC or NFKC step needs (runtime/tokenizer/unicode.h), from ICU.
struct NormalizationData {
  char32_t quickBelow = 0; // code points below are their own decomposition, of class 0
  /// Each code point's full decomposition where it is not itself, ascending; Hangul syllables
  /// are left to the runtime's arithmetic.
  std::vector<std::pair<char32_t, std::vector<char32_t>>> decompositions;
  std::vector<std::pair<char32_t, uint8_t>> classRuns; // from [0].first = 0: start and class
  struct Composition {
    char32_t first, second, composite;
  };
  std::vector<Composition> compositions; // canonical, but Hangul's; ascending by (first, second)
};
const NormalizationData &normalizationData(NormalForm form);
uint8_t combiningClass(char32_t c);

} // namespace needle::tokenizer
