// The safetensors format: an 8-byte little-endian header length, a JSON header, tensor bytes.
// The reader validates the header completely before any tensor is touched.
#pragma once

#include "Support/Files.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace needle {

enum class DType { F32, F16, BF16, U8, I32 };

const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; // relative to the data section
  int64_t elements() const;
};

class SafetensorsFile {
public:
  /// Reads and validates `path`: header length and JSON, known dtypes, shapes x dtype = byte
  /// size, offsets inside the file, no overlaps, no duplicate names. Errors name the path and
  /// the tensor.
  static SafetensorsFile read(const std::filesystem::path &path);
  /// The same checks on a file's bytes already in memory (the fuzzers' entry point); errors
  /// name `name`.
  static SafetensorsFile parse(std::span<const uint8_t> bytes, std::string name);

  const std::string &path() const { return path_; }
  const std::vector<SafetensorsEntry> &entries() const { return entries_; }
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  const SafetensorsEntry *find(std::string_view name) const;
  std::span<const uint8_t> bytes(const SafetensorsEntry &entry) const;

  /// Values of a float tensor (F32, F16 or BF16) as f32.
  std::vector<float> floats(const SafetensorsEntry &entry) const;

private:
  /// read() and parse(): `head(n)` gives the first n bytes (all of them when there are fewer)
  /// and the whole size, so only what the header covers is ever read.
  static SafetensorsFile load(std::string name, const std::function<FileHead(uint64_t)> &head);

  std::string path_;
  std::vector<uint8_t> file_;
  size_t dataStart_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

/// One tensor to write: its bytes must be shape x dtype long.
struct SafetensorsWriteEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// A safetensors file's bytes, tensors in the given order, data 8-byte aligned.
std::vector<uint8_t> serializeSafetensors(const std::vector<SafetensorsWriteEntry> &entries,
                                          const std::map<std::string, std::string> &metadata);

/// Writes serializeSafetensors' bytes to `path`.
void writeSafetensors(const std::filesystem::path &path, const std::vector<SafetensorsWriteEntry> &entries,
                      const std::map<std::string, std::string> &metadata);

} // namespace needle
