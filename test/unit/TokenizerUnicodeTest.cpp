// The tokenizer's UTF-8 helpers (compiler/Tokenizer/Unicode.h): invalid bytes as code points of
// their own, and WHATWG's replacement of maximal invalid subparts when decoding; and the
// runtime's fixed White_Space set (runtime/tokenizer/added.h) against ICU's.
#include "Tokenizer/Unicode.h"
#include "runtime/tokenizer/added.h"

#include <gtest/gtest.h>

namespace needle::tokenizer {
namespace {

TEST(TokenizerUnicode, InvalidBytesAreCodePointsOfTheirOwnAndKeepTheirBytes) {
  const std::string text = "a\xC3\xA9\xFF\xE2\x82z\xED\xA0\x80";
  const std::vector<char32_t> points = decodeUtf8(text);
  EXPECT_EQ(points,
            (std::vector<char32_t>{U'a', U'\u00e9', kInvalidByte + 0xFF, kInvalidByte + 0xE2, kInvalidByte + 0x82, U'z',
                                   kInvalidByte + 0xED, kInvalidByte + 0xA0, kInvalidByte + 0x80}));
  EXPECT_EQ(encodeUtf8(points, 0, points.size()), text);
  EXPECT_EQ(decodeUtf8("\xF0\x9F\x98\x80"), (std::vector<char32_t>{U'\U0001F600'}));
  EXPECT_EQ(decodeUtf8("\xC0\x80").size(), 2u); // overlong
}

TEST(TokenizerUnicode, LossyDecodingReplacesEachMaximalInvalidSubpartOnce) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(lossyUtf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(lossyUtf8("\xE2\x82"), fffd); // a truncated sequence: one
  EXPECT_EQ(lossyUtf8("\xF0\x9F\x98"
                      "A"),
            fffd + "A");                                               // broken before A: one, A kept
  EXPECT_EQ(lossyUtf8("\xC0\x80"), fffd + fffd);                       // invalid leads: one each
  EXPECT_EQ(lossyUtf8("\xED\xA0\x80"), fffd + fffd + fffd);            // a surrogate: ED's range excludes A0
  EXPECT_EQ(lossyUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd); // past U+10FFFF
}

TEST(TokenizerUnicode, TheRuntimesWhiteSpaceIsIcus) {
  for (char32_t c = 0; c < 0x110000; ++c)
    ASSERT_EQ(needle_rt::tok_white_space(c), isWhiteSpace(c)) << std::hex << uint32_t(c);
}

} // namespace
} // namespace needle::tokenizer
