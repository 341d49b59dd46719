#include "Support/Files.h"

#include "Support/Error.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sys/stat.h>
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

/// A file this run has read: its device and inode (so every name of it is recognised: hard
/// links, symlinks, `/proc/self/fd` links), and the path it was read by.
struct FileRead {
  dev_t device;
  ino_t inode;
  std::string path;
};

std::mutex filesReadMutex;
std::vector<FileRead> filesRead;

void noteRead(std::FILE *file, const fs::path &path) {
  struct stat st{};
  if (::fstat(::fileno(file), &st) != 0)
    return;
  const std::lock_guard<std::mutex> lock(filesReadMutex);
  for (const FileRead &read : filesRead)
    if (read.device == st.st_dev && read.inode == st.st_ino)
      return; // noted once: a harness that reads one scratch file a million times keeps one entry
  filesRead.push_back({st.st_dev, st.st_ino, path.string()});
}

/// The path this run read the file `path` leads to by, if it read it.
std::optional<std::string> readAs(const fs::path &path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return std::nullopt;
  const std::lock_guard<std::mutex> lock(filesReadMutex);
  for (const FileRead &read : filesRead)
    if (read.device == st.st_dev && read.inode == st.st_ino)
      return read.path;
  return std::nullopt;
}

/// Whether `path` lies under /proc or /dev, where a link names a descriptor or a device.
bool underDescriptorRoots(const fs::path &path) {
  const std::string text = fs::absolute(path).lexically_normal().string();
  return text.rfind("/proc/", 0) == 0 || text.rfind("/dev/", 0) == 0;
}

/// Follows `path`'s symlinks (at most 40, as the kernel does) to the path they lead to; stops at a
/// link under /proc or /dev, which names a descriptor or device rather than a path.
fs::path followLinks(fs::path path) {
  std::error_code ec;
  for (int hop = 0; hop < 40 && !underDescriptorRoots(path) && fs::is_symlink(path, ec); ++hop) {
    const fs::path target = fs::read_symlink(path, ec);
    if (ec)
      break;
    path = target.is_absolute() ? target : path.parent_path() / target;
  }
  return path;
}

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

/// Opens `path` for reading: a regular file (directories, devices, FIFOs and sockets refused
/// before anything is read), noted as one this run reads.
static std::FILE *openInput(const fs::path &path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    fail("{}: is a directory, expected a file", path.string());
  if (fs::exists(status) && !fs::is_regular_file(status))
    fail("{}: not a regular file (a device, FIFO or socket); models are read from files", path.string());
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  noteRead(file, path);
  return file;
}

/// Up to `limit` bytes of `file` from where it stands, into `bytes`; true if more remain. Errors
/// name `path`; the file is closed on error.
static bool readUpTo(std::FILE *file, const fs::path &path, uint64_t limit, std::vector<uint8_t> &bytes) {
  uint8_t chunk[1 << 16];
  try {
    while (bytes.size() < limit) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof chunk, limit - bytes.size()));
      const size_t got = std::fread(chunk, 1, want, file);
      bytes.insert(bytes.end(), chunk, chunk + got);
      if (got < want)
        break;
    }
  } catch (const std::bad_alloc &) {
    std::fclose(file);
    fail("{}: out of memory after reading {} bytes of it", path.string(), bytes.size());
  }
  if (std::ferror(file)) {
    std::fclose(file);
    fail("{}: read error", path.string());
  }
  return bytes.size() == limit && std::fgetc(file) != EOF;
}

std::vector<uint8_t> readFile(const fs::path &path, uint64_t maxBytes) {
  std::FILE *file = openInput(path);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (!ec && size > maxBytes) {
    std::fclose(file);
    fail("{}: {} bytes, more than the {} bytes this file may have", path.string(), size, maxBytes);
  }
  std::vector<uint8_t> bytes;
  const bool more = readUpTo(file, path, maxBytes, bytes); // the file may grow while we read it
  std::fclose(file);
  if (more)
    fail("{}: more than the {} bytes this file may have", path.string(), maxBytes);
  return bytes;
}

FileHead readFileHead(const fs::path &path, uint64_t count) {
  std::FILE *file = openInput(path);
  std::error_code ec;
  FileHead head{{}, fs::file_size(path, ec)};
  readUpTo(file, path, count, head.bytes);
  std::fclose(file);
  if (ec)
    head.size = head.bytes.size();
  return head;
}

bool sameFile(const fs::path &a, const fs::path &b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec))
    return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

/// The error for an output that would replace the input `input`.
[[noreturn]] static void failOutputIsInput(std::string_view flag, const fs::path &output, const std::string &input) {
  fail("{} {}: is the input {}; write the output to another path", flag, output.string(), input);
}

void checkNotInput(const fs::path &output, const fs::path &input, std::string_view flag) {
  if (sameFile(output, input))
    failOutputIsInput(flag, output, input.string());
}

bool writesThrough(const fs::path &path) {
  const fs::path target = followLinks(path);
  return underDescriptorRoots(target) || isSpecial(target);
}

void checkNotRead(const fs::path &output, std::string_view flag) {
  if (const std::optional<std::string> input = readAs(output))
    failOutputIsInput(flag, output, *input);
}

PendingOutput::PendingOutput(fs::path path, Kind kind, std::string flag)
    : path_(std::move(path)), flag_(std::move(flag)), kind_(kind) {
  if (path_.empty())
    fail("no output path given (-o)");
  std::error_code ec;
  checkNotRead(path_, flag_);
  if (writesThrough(path_)) {
    if (kind_ == Kind::Directory)
      fail("{}: exists and is not a directory", path_.string());
    // Replacing a device, a FIFO or a descriptor's link would destroy it, or write where the
    // caller's descriptor does not look: write through instead.
    staging_ = target_ = path_;
    writeThrough_ = true;
    return;
  }
  target_ = followLinks(path_); // through a symlink: the file it names is replaced, the link stays
  if (kind_ == Kind::File && fs::is_directory(target_, ec))
    fail("{}: is a directory; name a file to write", path_.string());
  if (kind_ == Kind::Directory && fs::exists(target_, ec) && !fs::is_directory(target_, ec))
    fail("{}: exists and is not a directory", path_.string());
  fs::path parent = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
  if (!fs::is_directory(parent, ec))
    fail("{}: the output's directory {} does not exist", path_.string(), parent.string());
  // The pid and a counter keep two outputs of one run, or two runs, from sharing a staging path.
  static std::atomic<unsigned> counter{0};
  staging_ = parent / fmt::format(".{}.tmp{}.{}", target_.filename().string(), ::getpid(), counter++);
  fs::remove_all(staging_, ec);
  if (kind_ == Kind::Directory && !fs::create_directory(staging_, ec))
    fail("{}: cannot create: {}", path_.string(), ec.message());
}

/// Whether two regular files hold the same bytes (false when either cannot be read).
static bool sameBytes(const fs::path &a, const fs::path &b) {
  std::error_code ec;
  if (!fs::is_regular_file(a, ec) || !fs::is_regular_file(b, ec) || fs::file_size(a, ec) != fs::file_size(b, ec))
    return false;
  std::ifstream first(a, std::ios::binary), second(b, std::ios::binary);
  return first && second &&
         std::equal(std::istreambuf_iterator<char>(first), std::istreambuf_iterator<char>(),
                    std::istreambuf_iterator<char>(second), std::istreambuf_iterator<char>());
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
  checkNotRead(path_, flag_); // the run may have read it since the output was staged
  if (writeThrough_) {
    committed_ = true;
    return;
  }
  if (kind_ == Kind::File && keepWhenUnchanged_ && sameBytes(staging_, target_)) {
    fs::remove(staging_, ec);
    committed_ = true;
    return;
  }
  if (kind_ == Kind::Directory && fs::is_directory(target_, ec)) {
    // Into an existing directory: check every name first, so a failure moves nothing.
    for (const auto &entry : fs::directory_iterator(staging_))
      if (fs::is_directory(target_ / entry.path().filename(), ec))
        fail("{}: is a directory; cannot write the file there", (path_ / entry.path().filename()).string());
    for (const auto &entry : fs::directory_iterator(staging_)) {
      fs::rename(entry.path(), target_ / entry.path().filename(), ec);
      if (ec)
        fail("{}: cannot write: {}", (path_ / entry.path().filename()).string(), ec.message());
    }
    fs::remove_all(staging_, ec);
    ec.clear();
  } else {
    fs::rename(staging_, target_, ec);
  }
  if (ec)
    fail("{}: cannot write: {}", path_.string(), ec.message());
  committed_ = true;
}

void guardStandardStreams() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF)
      ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY); // the lowest free descriptor: fd itself
}

/// The error for output lost on its way to stdout: errno's reason, or EIO when it gave none.
[[noreturn]] static void failStdout(int error) {
  std::clearerr(stdout);
  fail("stdout: cannot write: {}", std::strerror(error ? error : EIO));
}

void writeStdout(std::string_view bytes) {
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size())
    failStdout(errno);
  finishStdout();
}

void finishStdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed || std::ferror(stdout))
    failStdout(errno);
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
