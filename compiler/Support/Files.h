// File access for the file layer: whole-file reads and outputs that appear only on success.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace needle {

/// Reads a whole file; errors name the path.
std::vector<uint8_t> readFile(const std::filesystem::path &path);

/// An output that is written to a temporary sibling and renamed over `path` by commit(), so a
/// failed run leaves nothing at `path`. Works for a single file or a directory.
class PendingOutput {
public:
  enum class Kind { File, Directory };
  PendingOutput(std::filesystem::path path, Kind kind);
  ~PendingOutput();
  PendingOutput(const PendingOutput &) = delete;
  PendingOutput &operator=(const PendingOutput &) = delete;

  /// Where to write now: the temporary file, or the temporary directory.
  const std::filesystem::path &staging() const { return staging_; }
  void commit();

private:
  std::filesystem::path path_;
  std::filesystem::path staging_;
  Kind kind_;
  bool committed_ = false;
};

/// Writes bytes to `path` (a staging path), failing with the path in the message.
void writeFile(const std::filesystem::path &path, std::span<const uint8_t> bytes);
void writeFile(const std::filesystem::path &path, std::string_view text);

} // namespace needle
