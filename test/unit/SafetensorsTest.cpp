#include "Model/Safetensors.h"
#include "Support/Error.h"
#include "Support/Files.h"
#include "TestModels.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace needle;

namespace {

/// A safetensors file from a raw header and `dataBytes` bytes of data.
std::filesystem::path rawFile(const std::string &header, size_t dataBytes, uint64_t claimedLength = UINT64_MAX) {
  static int counter = 0;
  auto path = test::scratchDir("st" + std::to_string(counter++)) / "x.safetensors";
  std::vector<uint8_t> bytes(8 + header.size() + dataBytes, 0);
  const uint64_t length = claimedLength == UINT64_MAX ? header.size() : claimedLength;
  std::memcpy(bytes.data(), &length, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  writeFile(path, bytes);
  return path;
}

std::string errorOf(const std::filesystem::path &path) {
  try {
    SafetensorsFile::read(path);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, WriteThenReadRoundTrips) {
  auto path = test::scratchDir("st-roundtrip") / "a.safetensors";
  std::vector<uint8_t> f32(8), i32(12), f16(4);
  float values[2] = {1.5f, -2.0f};
  std::memcpy(f32.data(), values, 8);
  f16 = {0x00, 0x3C, 0x00, 0xC0}; // 1.0, -2.0
  writeSafetensors(path, {{"w", DType::F32, {2}, f32}, {"p", DType::I32, {3}, i32}, {"h", DType::F16, {1, 2}, f16}},
                   {{"k", "v"}});
  SafetensorsFile file = SafetensorsFile::read(path);
  ASSERT_EQ(file.entries().size(), 3u);
  EXPECT_EQ(file.metadata().at("k"), "v");
  EXPECT_EQ(file.floats(*file.find("w")), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(file.floats(*file.find("h")), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(file.find("h")->shape, (std::vector<int64_t>{1, 2}));
}

TEST(Safetensors, RejectsEveryMalformedHeader) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(errorOf(rawFile(ok, 8)), "");
  struct Case {
    std::filesystem::path file;
    std::string message;
  };
  const Case cases[] = {
      {rawFile("", 0, 0).parent_path() / "missing.safetensors", "cannot open"},
      {rawFile(ok, 8, 1u << 30), "header length 1073741824 is more than the 16777216 bytes"},
      {rawFile(ok, 8, 1u << 20), "header length 1048576 exceeds the file"},
      {rawFile(R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1),
       "shape has 9 dimensions, more than 8"},
      {rawFile(ok, 4), "tensor \"a\": data_offsets [0, 8] run past the end of the data (4 bytes); truncated?"},
      {rawFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 12),
       "tensor \"a\": 8 bytes of data, but shape"},
      {rawFile(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8), "dtype \"F64\" is not supported"},
      {rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "end 0 is before begin 8"},
      {rawFile(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "shape must hold non-negative"},
      {rawFile(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "data_offsets must be two"},
      {rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8), "unknown field \"x\""},
      {rawFile(
           R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
           8),
       "tensors \"a\" and \"b\" overlap"},
      {rawFile(
           R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
           2),
       "duplicate key \"a\""},
      {rawFile(R"({"__metadata__":{"k":1}})", 0), "__metadata__.k: expected a string"},
      {rawFile(R"({"a":)", 0), "header: line 1"},
      {rawFile(R"([1])", 0), "header: expected a JSON object"},
      {rawFile(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "shape [4294967296, 4294967296] is negative or too large"},
  };
  for (const Case &c : cases) {
    const std::string error = errorOf(c.file);
    EXPECT_NE(error.find(c.message), std::string::npos) << "expected \"" << c.message << "\", got \"" << error << "\"";
    EXPECT_NE(error.find(c.file.string()), std::string::npos) << "error does not name the file: " << error;
  }
}

TEST(Safetensors, TooShortForTheLength) {
  auto path = test::scratchDir("st-short") / "x.safetensors";
  writeFile(path, std::string("abc"));
  EXPECT_NE(errorOf(path).find("truncated: 3 bytes"), std::string::npos);
}

} // namespace
