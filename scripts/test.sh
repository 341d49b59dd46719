#!/usr/bin/env bash
# Installs, builds and runs every test: once optimized, once under AddressSanitizer and
# UndefinedBehaviorSanitizer. Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh

BUILD_DIR=build scripts/build.sh
(cd build && ctest --output-on-failure -j2)

BUILD_DIR=build-sanitize scripts/build.sh -DNEEDLE_SANITIZE=ON
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-sanitize && ctest --output-on-failure -j2)
