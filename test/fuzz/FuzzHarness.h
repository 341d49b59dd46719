// What the fuzz harnesses share (docs/reliability.md): a needle::Error is a correct answer to a
// bad input, anything else is a finding; invariants trap. Every harness runs in memory.
#pragma once

#include "Support/Error.h"

#include <cstdint>
#include <cstdio>
#include <string_view>

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

} // namespace needle::fuzz
