#include "Support/Files.h"

#include "Support/Error.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace fs = std::filesystem;

namespace needle {

namespace {

/// An existing file that is neither regular nor a directory: a device, a FIFO, a socket.
bool isSpecial(const fs::path &path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  return !ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status);
}

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

std::vector<uint8_t> readFile(const fs::path &path, uint64_t maxBytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    fail("{}: is a directory, expected a file", path.string());
  if (fs::exists(status) && !fs::is_regular_file(status))
    fail("{}: not a regular file (a device, FIFO or socket); models are read from files", path.string());
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  const uint64_t size = fs::file_size(path, ec);
  if (!ec && size > maxBytes) {
    std::fclose(file);
    fail("{}: {} bytes, more than the {} bytes this file may have", path.string(), size, maxBytes);
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t got;
  bool tooBig = false;
  while (!tooBig && (got = std::fread(chunk, 1, sizeof chunk, file)) > 0) {
    bytes.insert(bytes.end(), chunk, chunk + got);
    tooBig = bytes.size() > maxBytes; // the file grew while we read it
  }
  const bool bad = std::ferror(file);
  std::fclose(file);
  if (tooBig)
    fail("{}: more than the {} bytes this file may have", path.string(), maxBytes);
  if (bad)
    fail("{}: read error", path.string());
  return bytes;
}

bool sameFile(const fs::path &a, const fs::path &b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec))
    return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

void checkNotInput(const fs::path &output, const fs::path &input, std::string_view flag) {
  if (sameFile(output, input))
    fail("{} {}: is the input {}; write the output to another path", flag, output.string(), input.string());
}

PendingOutput::PendingOutput(fs::path path, Kind kind) : path_(std::move(path)), kind_(kind) {
  if (path_.empty())
    fail("no output path given (-o)");
  std::error_code ec;
  if (isSpecial(path_)) {
    if (kind_ == Kind::Directory)
      fail("{}: exists and is not a directory", path_.string());
    staging_ = path_; // replacing a device or FIFO would destroy it: write through instead
    writeThrough_ = true;
    return;
  }
  if (kind_ == Kind::File && fs::is_directory(path_, ec))
    fail("{}: is a directory; name a file to write", path_.string());
  if (kind_ == Kind::Directory && fs::exists(path_, ec) && !fs::is_directory(path_, ec))
    fail("{}: exists and is not a directory", path_.string());
  fs::path parent = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
  if (!fs::is_directory(parent, ec))
    fail("{}: the output's directory {} does not exist", path_.string(), parent.string());
  // The pid and a counter keep two outputs of one run, or two runs, from sharing a staging path.
  static std::atomic<unsigned> counter{0};
  staging_ = parent / fmt::format(".{}.tmp{}.{}", path_.filename().string(), ::getpid(), counter++);
  fs::remove_all(staging_, ec);
  if (kind_ == Kind::Directory && !fs::create_directory(staging_, ec))
    fail("{}: cannot create: {}", path_.string(), ec.message());
}

PendingOutput::~PendingOutput() {
  if (!committed_ && !writeThrough_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

void PendingOutput::rethrowNamingOutput(const std::exception &e) const {
  throw Error(replaceAll(e.what(), staging_.string(), path_.string()));
}

void PendingOutput::write(std::span<const uint8_t> bytes) {
  writeWith([&](const fs::path &staging) { writeFile(staging, bytes); });
}

void PendingOutput::write(std::string_view text) {
  write(std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

void PendingOutput::commit() {
  std::error_code ec;
  if (writeThrough_) {
    committed_ = true;
    return;
  }
  if (kind_ == Kind::Directory && fs::is_directory(path_, ec)) {
    // Into an existing directory: check every name first, so a failure moves nothing.
    for (const auto &entry : fs::directory_iterator(staging_))
      if (fs::is_directory(path_ / entry.path().filename(), ec))
        fail("{}: is a directory; cannot write the file there", (path_ / entry.path().filename()).string());
    for (const auto &entry : fs::directory_iterator(staging_)) {
      fs::rename(entry.path(), path_ / entry.path().filename(), ec);
      if (ec)
        fail("{}: cannot write: {}", (path_ / entry.path().filename()).string(), ec.message());
    }
    fs::remove_all(staging_, ec);
    ec.clear();
  } else {
    fs::rename(staging_, path_, ec);
  }
  if (ec)
    fail("{}: cannot write: {}", path_.string(), ec.message());
  committed_ = true;
}

void writeFile(const fs::path &path, std::span<const uint8_t> bytes) {
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    fail("{}: cannot write: {}", path.string(), std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size() && std::fflush(file) == 0;
  const int writeErrno = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed)
    fail("{}: cannot write: {}", path.string(), std::strerror(written ? errno : writeErrno));
}

void writeFile(const fs::path &path, std::string_view text) {
  writeFile(path, std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

} // namespace needle
