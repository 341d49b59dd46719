#include "Support/Error.h"
#include "Support/Files.h"
#include "Support/Half.h"
#include "Support/Json.h"
#include "Support/Limits.h"
#include "Support/RoundUp.h"

#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace needle;

namespace {

std::string parseError(std::string_view text) {
  try {
    json::parse(text, "src");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Json, ParsesNestedValues) {
  json::Value v = json::parse(R"({"a": [1, -2.5e1, "x\u00e9\n"], "b": {"c": true, "d": null}})", "src");
  ASSERT_EQ(v.kind, json::Value::Kind::Object);
  const json::Value *a = v.find("a");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->items[0].isInteger);
  EXPECT_EQ(a->items[0].integer, 1);
  EXPECT_FALSE(a->items[1].isInteger);
  EXPECT_DOUBLE_EQ(a->items[1].number, -25.0);
  EXPECT_EQ(a->items[2].string, "x\xc3\xa9\n");
  EXPECT_TRUE(v.find("b")->find("c")->boolean);
  EXPECT_EQ(v.find("b")->find("d")->kind, json::Value::Kind::Null);
}

TEST(Json, RejectsMalformedInputWithPosition) {
  EXPECT_NE(parseError("{\"a\": 1, \"a\": 2}").find("line 1, column 10: duplicate key \"a\""), std::string::npos);
  EXPECT_NE(parseError("{\"a\": 1}\n x").find("line 2, column 2: unexpected text"), std::string::npos);
  EXPECT_NE(parseError("{\"a\": ").find("unexpected end of input"), std::string::npos);
  EXPECT_NE(parseError("[1, 2").find("expected ']'"), std::string::npos);
  EXPECT_NE(parseError("\"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(parseError("01").find("unexpected text"), std::string::npos);
  EXPECT_NE(parseError("1e999").find("out of range"), std::string::npos);
  EXPECT_NE(parseError("[tru]").find("invalid literal"), std::string::npos);
  EXPECT_NE(parseError(std::string(100, '[')).find("too deep"), std::string::npos);
}

TEST(Json, StringsMustBeUtf8) {
  // Well-formed: two, three and four bytes, at the edges of Unicode's table 3-7.
  for (const char *ok : {"\"\xC2\x80\"", "\"\xE0\xA0\x80\"", "\"\xED\x9F\xBF\"", "\"\xEF\xBF\xBF\"",
                         "\"\xF0\x90\x80\x80\"", "\"\xF4\x8F\xBF\xBF\""})
    EXPECT_EQ(json::parse(ok, "src").string, std::string(ok + 1, std::strlen(ok) - 2));
  // A stray continuation byte, an overlong form, a surrogate, past U+10FFFF, a cut sequence, a
  // lead byte that can never start one: each named at its column.
  for (const char *bad : {"[\"a\x80\"]", "[\"a\xC0\xAF\"]", "[\"a\xED\xA0\x80\"]", "[\"a\xF4\x90\x80\x80\"]",
                          "[\"a\xE2\x82\"]", "[\"a\xFF\"]"})
    EXPECT_NE(parseError(bad).find("line 1, column 4: invalid UTF-8 in a string"), std::string::npos) << bad;
}

TEST(Json, SerializeRoundTrips) {
  const char *text = R"({"a":[1,2.5,"q\"x"],"b":{"c":false,"d":null}})";
  EXPECT_EQ(json::serialize(json::parse(text, "src")), text);
}

std::string nestingError(std::string_view text) {
  try {
    checkIrNesting(text, "ir");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Limits, ElementCountWithinStopsAtTheLimitAndOnOverflow) {
  EXPECT_EQ(elementCountWithin(std::vector<int64_t>{}), 1);
  EXPECT_EQ(elementCountWithin(std::vector<int64_t>{3, 0, int64_t(1) << 62}), 0);
  EXPECT_EQ(elementCountWithin(std::vector<int64_t>{1 << 14, 1 << 14}), int64_t(1) << 28);
  EXPECT_EQ(elementCountWithin(std::vector<int64_t>{(1 << 14) + 1, 1 << 14}), -1);
  EXPECT_EQ(elementCountWithin(std::vector<int64_t>{int64_t(1) << 40, int64_t(1) << 40}, INT64_MAX), -1);
  EXPECT_EQ(elementCountWithin(std::vector<int64_t>{4, -1}), -1);
}

TEST(Limits, IrNestingCountsBracketsButNotArrowsStringsOrComments) {
  const std::string deep = std::string(kMaxIrNesting, '(');
  EXPECT_EQ(nestingError(deep), "");
  EXPECT_EQ(nestingError("\n" + deep + "<"), "ir: line 2: brackets nest more than 64 deep; needle IR never does");
  // Arrows, comparisons, strings and comments open nothing; closing brackets free their level.
  const std::string closing = std::string(kMaxIrNesting, ')');
  EXPECT_EQ(nestingError(deep + " -> >= <= \"((((\\\"((\" // {{{{\n" + closing + deep), "");
  EXPECT_NE(nestingError(deep + ")" + "[<"), "");
}

TEST(Limits, IrNestingBoundsOperatorChainsInAffineMapsAndSets) {
  auto chain = [](const char *op, int operators) {
    std::string terms = "d0";
    for (int i = 0; i < operators; ++i)
      terms += std::string(" ") + op + " d0";
    return terms;
  };
  const std::string bound = std::to_string(kMaxAffineOperators);
  for (const char *op : {"+", "-", "*", "floordiv", "ceildiv", "mod"}) {
    EXPECT_EQ(nestingError("#m = affine_map<(d0) -> (" + chain(op, kMaxAffineOperators) + ")>"), "") << op;
    EXPECT_EQ(nestingError("\n#m = affine_map<(d0) -> (" + chain(op, kMaxAffineOperators + 1) + ")>"),
              "ir: line 2: an affine map or set with more than " + bound + " operators; needle IR never has one")
        << op;
  }
  // Unary minus recurses too; an integer set counts its constraints' operators, not ">=".
  EXPECT_NE(nestingError("affine_map<(d0) -> (" + std::string(kMaxAffineOperators + 1, '-') + "d0)>"), "");
  EXPECT_NE(nestingError("affine_set<(d0) : (" + chain("+", kMaxAffineOperators + 1) + " >= 0)>"), "");
  EXPECT_EQ(nestingError("affine_set<(d0) : (d0 >= 0, d0 - 1 >= 0)>"), "");
  // The count is per map, and operators outside any affine map are not counted.
  const std::string half = "affine_map<(d0) -> (" + chain("+", kMaxAffineOperators) + ")>";
  EXPECT_EQ(nestingError(half + "\n" + half + " " + std::string(1000, '+') + " modulo"), "");
}

TEST(Error, MessagesAreOneShortLine) {
  EXPECT_EQ(Error(std::string("key \0\n\x7f", 7)).what(), std::string("key \\x00\\x0a\\x7f"));
  // NEL (U+0085, a C1 control: a line break to some terminals), a line separator (U+2028), a
  // stray byte: every byte from 0x80 on is escaped.
  EXPECT_EQ(Error("a\xc2\x85"
                  "b\xe2\x80\xa8"
                  "c\xff")
                .what(),
            std::string("a\\xc2\\x85b\\xe2\\x80\\xa8c\\xff"));
  const std::string message = Error("a" + std::string(10000, 'b') + "z").what();
  EXPECT_LE(message.size(), 600u);
  EXPECT_EQ(message.front(), 'a');
  EXPECT_EQ(message.back(), 'z');
  EXPECT_NE(message.find("[... 9452 characters ...]"), std::string::npos) << message;
}

TEST(RoundUp, RoundsToWholeUnits) {
  EXPECT_EQ(roundUp(0, 128), 0);
  EXPECT_EQ(roundUp(1, 128), 128);
  EXPECT_EQ(roundUp(128, 128), 128);
  EXPECT_EQ(roundUp(129, 128), 256);
  EXPECT_EQ(roundUp(100, 64), 128);
  static_assert(roundUp(768, 128) == 768);
}

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToHalf(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // rounds up past the largest half: infinity
  EXPECT_EQ(floatToHalf(-1e9f), 0xFC00);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);     // halfway to the smallest subnormal: even
  EXPECT_EQ(floatToHalf(0x1p-25f * 3), 0x0002); // 1.5 units: to even (2)
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
}

/// A fresh directory under the system's temporary one, named after the test, removed with it.
struct ScratchDirectory {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("needle-support-test-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  ScratchDirectory() { std::filesystem::create_directories(path); }
  ~ScratchDirectory() { std::filesystem::remove_all(path); }
};

TEST(Files, WritesThroughDevicesAndDescriptorLinksOnly) {
  const ScratchDirectory scratch;
  EXPECT_TRUE(writesThrough("/dev/null"));
  EXPECT_TRUE(writesThrough("/dev/stdout"));
  std::filesystem::create_symlink("/proc/self/fd/1", scratch.path / "fd");
  EXPECT_TRUE(writesThrough(scratch.path / "fd"));
  writeFile(scratch.path / "file", "x");
  std::filesystem::create_symlink("file", scratch.path / "link");
  EXPECT_FALSE(writesThrough(scratch.path / "file"));
  EXPECT_FALSE(writesThrough(scratch.path / "link"));
  EXPECT_FALSE(writesThrough(scratch.path / "new"));
}

TEST(Files, AFileReadIsRefusedAsAnOutputByAnyName) {
  // Kept to the process's end: the files it reads stay noted, and a later test's new file must
  // not take the inode of one removed.
  static const ScratchDirectory scratch;
  writeFile(scratch.path / "input", "model");
  std::filesystem::create_hard_link(scratch.path / "input", scratch.path / "hard");
  std::filesystem::create_symlink(scratch.path / "input", scratch.path / "soft");
  EXPECT_NO_THROW(checkNotRead(scratch.path / "hard", "-o")); // not read yet
  readFile(scratch.path / "input");
  for (const char *name : {"input", "hard", "soft"})
    EXPECT_THROW(checkNotRead(scratch.path / name, "-o"), Error) << name;
  EXPECT_THROW(PendingOutput(scratch.path / "soft", PendingOutput::Kind::File), Error);
  EXPECT_NO_THROW(checkNotRead(scratch.path / "other", "-o"));
}

TEST(Files, ThroughASymlinkTheFileItNamesIsReplacedAndTheLinkStays) {
  const ScratchDirectory scratch;
  std::filesystem::create_symlink("target", scratch.path / "link");
  PendingOutput output(scratch.path / "link", PendingOutput::Kind::File);
  output.write(std::string_view("bytes"));
  output.commit();
  EXPECT_TRUE(std::filesystem::is_symlink(scratch.path / "link"));
  EXPECT_EQ(readFile(scratch.path / "target").size(), 5u);
}

} // namespace
