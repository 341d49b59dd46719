// What the fuzz harnesses share (docs/reliability.md): a needle::Error is a correct answer to a
// bad input, anything else is a finding; invariants trap; readers that only take a path read a
// file of this process's own.
#pragma once

#include "Support/Error.h"
#include "Support/Files.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace needle::fuzz {

/// config.json of the small model that the model seeds (seeds/*/small*) were made from by
/// make-seeds.sh: seeds/config/small.json, generated and embedded at build time.
inline constexpr std::string_view kSmallConfig =
#include "SmallConfig.inc"
    ;

/// Runs `body` and swallows a needle::Error only: another exception escapes to std::terminate,
/// and crashes and sanitizer reports reach libFuzzer, so each of those is a finding.
template <typename Body> int guarded(Body &&body) {
  try {
    body();
  } catch (const Error &) {
  }
  return 0;
}

[[noreturn]] inline void violated(const char *check, const char *file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", file, line, check);
  std::fflush(stderr);
  __builtin_trap();
}

/// Something the code under test promises; a violation traps, which libFuzzer reports as a crash.
#define NEEDLE_FUZZ_CHECK(condition) ((condition) ? void() : ::needle::fuzz::violated(#condition, __FILE__, __LINE__))

/// `body()` where the input is known good (e.g. our own output read back): a needle::Error there
/// is a finding, so it traps instead of being swallowed by guarded().
template <typename Body> auto mustAccept(const char *what, Body &&body) {
  try {
    return body();
  } catch (const Error &e) {
    std::fprintf(stderr, "fuzz invariant violated: %s failed: %s\n", what, e.what());
    std::fflush(stderr);
    __builtin_trap();
  }
}

/// True when `body()` throws a needle::Error (a refusal the contract promises).
template <typename Body> bool refuses(Body &&body) {
  try {
    body();
  } catch (const Error &) {
    return true;
  }
  return false;
}

/// A directory of this process's own under the temp directory, removed at exit. The readers that
/// take only a path read files written here, so fuzzing never opens anything else.
class ScratchDir {
public:
  explicit ScratchDir(std::string_view name)
      : dir_(std::filesystem::temp_directory_path() /
             ("needle-fuzz-" + std::string(name) + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  std::filesystem::path path(std::string_view file) const { return dir_ / file; }
  /// Writes `bytes` as `file` (called outside guarded(): a failure here is the harness's own).
  std::filesystem::path write(std::string_view file, std::span<const uint8_t> bytes) const {
    writeFile(path(file), bytes);
    return path(file);
  }
  std::filesystem::path write(std::string_view file, std::string_view text) const {
    writeFile(path(file), text);
    return path(file);
  }

private:
  std::filesystem::path dir_;
};

} // namespace needle::fuzz
