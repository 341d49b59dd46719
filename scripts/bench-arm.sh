#!/usr/bin/env bash
# Arm measured without Arm hardware (docs/performance.md, "Arm"): executed instructions counted
# exactly under qemu-user (scripts/arm_count.py: one log line per instruction, two run lengths
# subtracted) and llvm-mca-19's cycles per 64 weights of each kernel's hottest loop, for
#   - the runtime's CQ kernels on aarch64 (test/bench/arm/cq_count.cpp, built with clang-19 -O3 as
#     needlec builds the runtime): the exact mode's NEON CQ2 and CQ4 (CqLut16; CQ4 on CqX8 too),
#     the fast mode's NEON tables, and the portable kernel on the file's layout;
#   - ggml's Q2_K matvec (test/bench/arm/ggml_q2k.c) built from ../shared/peers for armv8-a and
#     armv8.2-a+dotprod, in a cache outside the repository (never linked into the project);
#   - one decode step of needle3 (random weights, CQ) at depths 2 and 8, exact and fast, compiled by
#     needlec for aarch64 and linked into test/bench/bench_model.c, per kernel family.
# One token, a 1024 x 1024 matrix. Prints markdown tables. Needs a build (scripts/build.sh); takes
# about half an hour on 2 cores, most of it qemu logging needle3's steps (and a few minutes more
# the first time, to build ggml). Measurement only: this is not a test.
#
#   scripts/bench-arm.sh [PEERS_DIR]     default: ../shared/peers beside this repository
set -euo pipefail
cd "$(dirname "$0")/.."
peers=$(cd "${1:-../shared/peers}" && pwd)
bin=build/bin
work=build/bench-arm
count="/usr/bin/python3 scripts/arm_count.py"
rows=1024
cols=1024
mkdir -p "$work"

# ggml for aarch64, once per architecture level, in the peers' cache (a few minutes each).
ggml_library() { # ARCH -> the build directory
  local arch=$1 cache=${XDG_CACHE_HOME:-$HOME/.cache}/needle-peers/ggml-aarch64-${1//+/-}
  if [ ! -f "$cache/build/src/libggml-cpu.a" ]; then
    rm -rf "$cache" && mkdir -p "$cache" && cp -r "$peers/ggml" "$cache/src" && chmod -R u+w "$cache/src"
    cmake -S "$cache/src" -B "$cache/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
      -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
      -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
      -DGGML_CPU_ARM_ARCH="$arch" -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF -DGGML_CPU_REPACK=OFF >"$cache/configure.log" 2>&1 ||
      { echo "bench-arm: configuring ggml failed: $cache/configure.log" >&2; exit 1; }
    cmake --build "$cache/build" --target ggml-cpu ggml-base >"$cache/build.log" 2>&1 ||
      { echo "bench-arm: building ggml failed: $cache/build.log" >&2; exit 1; }
  fi
  echo "$cache"
}

# Traces BINARY ARGS with one run (short) and 1 + RUNS runs (long) of what the last argument
# counts: arm_count.py's inputs, NAME.short and NAME.long.
trace_pair() { # NAME RUNS BINARY ARGS... (the run count comes last)
  local name=$1 runs=$2
  shift 2
  $count trace "$work/$name.short" -- "$@" 1
  $count trace "$work/$name.long" -- "$@" $((1 + runs))
}

echo "| kernel (aarch64, one token) | instructions per weight | hottest loop | cycles per 64 weights: $(
  echo cortex-a76 cortex-a55 neoverse-v1 apple-m1 neoverse-n1 | sed 's/ / | /g') |"
echo "|---|---|---|---|---|---|---|---|"
clang++-19 --target=aarch64-linux-gnu -std=c++17 -O3 -static -I. -Icompiler -Iruntime test/bench/arm/cq_count.cpp \
  codegen/Select/WeightLayouts.cpp -o "$work/cq_count"
for kernel in exact2 exact4 x8exact4 fast2 fast4 file2; do
  trace_pair "$kernel" 2 "$work/cq_count" "$kernel" "$rows" "$cols"
  $count kernel "needlec $kernel" $((rows * cols)) "$work/cq_count" "$work/$kernel.short" "$work/$kernel.long" 2
done
for arch in armv8-a armv8.2-a+dotprod; do
  cache=$(ggml_library "$arch")
  aarch64-linux-gnu-gcc -std=c11 -O2 -I"$cache/src/include" -c test/bench/arm/ggml_q2k.c -o "$work/ggml_q2k.o"
  aarch64-linux-gnu-g++ -static "$work/ggml_q2k.o" "$cache/build/src/libggml-cpu.a" "$cache/build/src/libggml-base.a" \
    -lm -lpthread -o "$work/ggml-$arch"
  trace_pair "ggml-$arch" 2 "$work/ggml-$arch" "$rows" "$cols"
  $count kernel "ggml Q2_K $arch" $((rows * cols)) "$work/ggml-$arch" "$work/ggml-$arch.short" "$work/ggml-$arch.long" 2
done

echo
echo "| needle3 decode step (aarch64) | kernel family | instructions | share |"
echo "|---|---|---|---|"
model=$work/needle3.needle
[ -f "$model" ] || "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$model"
for depth in 2 8; do
  for mode in float int8; do
    name=step-$depth-$mode
    "$bin/needlec" "$model" --layers "$depth" --target aarch64 --activations "$mode" -o "$work/$name"
    aarch64-linux-gnu-gcc -std=c11 -O2 -static -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"$name.h\"" -I"$work" \
      -Iexamples test/bench/bench_model.c examples/pools/pool_threads.c "$work/$name.o" -lm -pthread -o "$work/$name"
    # bench_model PREFILL DECODE REPEATS: one token of prefill, then 1 or 3 decoded
    $count trace "$work/$name.short" -- "$work/$name" 1 1 1
    $count trace "$work/$name.long" -- "$work/$name" 1 3 1
    $count step "depth $depth $([ $mode = float ] && echo exact || echo fast)" "$work/$name.short" "$work/$name.long" 2
  done
done
