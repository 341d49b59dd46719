// File access for the file layer: bounded whole-file reads and outputs that appear only on success.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace needle {

/// The largest file any tool reads whole (a model with every tensor in f32 fits well below it).
inline constexpr uint64_t kMaxInputBytes = uint64_t(16) << 30;

/// Reads a whole regular file of at most `maxBytes`; errors name the path. Devices, FIFOs and
/// directories are refused before anything is read. The file is noted as one this run reads, so
/// no output of the run may replace it (PendingOutput).
std::vector<uint8_t> readFile(const std::filesystem::path &path, uint64_t maxBytes = kMaxInputBytes);

/// The first bytes of a regular file, and its size.
struct FileHead {
  std::vector<uint8_t> bytes; // the first `count` asked for, or the whole file when it is shorter
  uint64_t size;
};

/// Reads the first `count` bytes of `path` (refused and noted as readFile does): a format's header,
/// checked against the file's size before any more is read.
FileHead readFileHead(const std::filesystem::path &path, uint64_t count);

/// True when both paths name one file: the same inode when both exist, else the same canonical path.
bool sameFile(const std::filesystem::path &a, const std::filesystem::path &b);

/// Fails when `output` and `input` are the same file (hard links, symlinks and `./` spellings
/// included): no tool overwrites what it reads. `flag` names the option that gave `output`.
void checkNotInput(const std::filesystem::path &output, const std::filesystem::path &input, std::string_view flag);

/// Fails when `output` (through its links) is a file this run has read (readFile), by any of
/// its names: no output replaces an input, a model directory's files included. `flag` names the
/// option that gave `output`.
void checkNotRead(const std::filesystem::path &output, std::string_view flag);

/// Whether an output at `path` is written through rather than staged and renamed: a device, a
/// FIFO or a socket, or a path whose links lead into /proc or /dev (`/dev/stdout`, a link to
/// `/proc/self/fd/N`), which name a descriptor the caller holds.
bool writesThrough(const std::filesystem::path &path);

/// An output that is written to a temporary sibling and renamed over `path` by commit(), so a
/// failed run leaves nothing at `path`. Works for a single file or a directory. Through a symlink,
/// the file it names is replaced and the link stays; what writesThrough() says of is written
/// through, never replaced. Neither may be a file the run read (checkNotRead, when staged and
/// again at commit); `flag` names the option in that error.
class PendingOutput {
public:
  enum class Kind { File, Directory };
  PendingOutput(std::filesystem::path path, Kind kind, std::string flag = "-o");
  ~PendingOutput();
  PendingOutput(const PendingOutput &) = delete;
  PendingOutput &operator=(const PendingOutput &) = delete;

  const std::filesystem::path &path() const { return path_; }
  /// Where to write now: the temporary file or directory (or the device itself).
  const std::filesystem::path &staging() const { return staging_; }
  /// Runs `write(staging())`: its errors name the output path, not the temporary one.
  template <typename Write> void writeWith(Write &&write) {
    try {
      write(staging_);
    } catch (const std::exception &e) {
      rethrowNamingOutput(e);
    }
  }
  /// Writes `bytes` as the whole output (Kind::File).
  void write(std::span<const uint8_t> bytes);
  void write(std::string_view text);
  /// Moves the output into place; fails (naming the path) if any part of it could not be moved.
  void commit();
  /// Makes commit() leave a file that already holds exactly these bytes as it is, its time
  /// included: a header whose content did not change then rebuilds none of the sources that
  /// include it (Kind::File).
  void keepWhenUnchanged() { keepWhenUnchanged_ = true; }

private:
  [[noreturn]] void rethrowNamingOutput(const std::exception &e) const;

  std::filesystem::path path_;
  std::filesystem::path target_; // path_ through its links: what commit() replaces
  std::filesystem::path staging_;
  std::string flag_;
  Kind kind_;
  bool writeThrough_ = false;
  bool keepWhenUnchanged_ = false;
  bool committed_ = false;
};

/// Opens /dev/null on any of descriptors 0, 1 and 2 that is closed, the wrong way round (write-only
/// for stdin, read-only for stdout and stderr): a file the tool opens later never becomes its
/// stdout, and every use of the closed stream still fails (EBADF), as finishStdout reports.
void guardStandardStreams();

/// Writes `bytes` to stdout and flushes it; fails ("stdout: cannot write: ...") if any is lost.
void writeStdout(std::string_view bytes);

/// Flushes stdout; fails ("stdout: cannot write: ...") when anything written to it was lost, as to
/// a full disk or a closed descriptor.
void finishStdout();

/// Writes bytes to `path`, failing with the path and the system's reason in the message.
void writeFile(const std::filesystem::path &path, std::span<const uint8_t> bytes);
void writeFile(const std::filesystem::path &path, std::string_view text);

} // namespace needle
