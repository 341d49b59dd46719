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
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the slabs it starts and unpoisons what
# it hands out, but only in code built with ASan. MLIR's storage uniquer shares one allocator
# between our instrumented code (which may start a slab, poisoned) and Debian's uninstrumented
# libMLIR (which then writes into it without unpoisoning): a false use-after-poison. Turning
# manual poisoning off keeps every real ASan check.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_poisoning=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-sanitize && ctest --output-on-failure -j2)

# Coverage-guided fuzzing of every input reader and of the emitted runtime, 15 s per target
# (docs/reliability.md).
scripts/fuzz.sh 15
