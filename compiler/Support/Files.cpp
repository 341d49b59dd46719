#include "Support/Files.h"

#include "Support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace needle {

std::vector<uint8_t> readFile(const fs::path &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail("{}: is a directory, expected a file", path.string());
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, file)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + got);
  bool bad = std::ferror(file);
  std::fclose(file);
  if (bad)
    fail("{}: read error", path.string());
  return bytes;
}

PendingOutput::PendingOutput(fs::path path, Kind kind) : path_(std::move(path)), kind_(kind) {
  if (path_.empty())
    fail("no output path given (-o)");
  fs::path parent = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    fail("{}: the output's directory {} does not exist", path_.string(), parent.string());
  staging_ = parent / fmt::format(".{}.tmp{}", path_.filename().string(), ::getpid());
  fs::remove_all(staging_, ec);
  if (kind_ == Kind::Directory && !fs::create_directory(staging_, ec))
    fail("{}: cannot create: {}", staging_.string(), ec.message());
}

PendingOutput::~PendingOutput() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

void PendingOutput::commit() {
  std::error_code ec;
  if (kind_ == Kind::Directory && fs::is_directory(path_, ec)) {
    // Replace only a directory that holds nothing but what we write.
    for (const auto &entry : fs::directory_iterator(staging_))
      fs::rename(entry.path(), path_ / entry.path().filename(), ec);
    fs::remove_all(staging_, ec);
  } else {
    fs::rename(staging_, path_, ec);
  }
  if (ec)
    fail("{}: cannot write: {}", path_.string(), ec.message());
  committed_ = true;
}

void writeFile(const fs::path &path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    fail("{}: write failed", path.string());
}

void writeFile(const fs::path &path, std::string_view text) {
  writeFile(path, std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

} // namespace needle
