#!/usr/bin/env bash
# Decode and prefill of the C++ backend on the needle3 preset at depths 2, 8 and 20, one thread,
# beside the rooflines: bytes a token streams (needle-bench's accounting) over the read bandwidth
# of DRAM and of the model's own working set. Prints a markdown table (docs/performance.md).
# Needs a build (scripts/build.sh). Timing only: this is not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
work=build/bench-cpp
mkdir -p "$work"
[ -f "$work/needle3.needle" ] || "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$work/needle3.needle"
echo "| depth | weights | compile (needlec + g++ -O2) | prefill 128 tok/s | decode tok/s | arena |"
echo "|---|---|---|---|---|---|"
for depth in 2 8 20; do
  out="$work/d$depth"
  start=$(date +%s%N)
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --emit cpp -o "$out"
  c++ -std=c++17 -O2 -march=native -c "$out.cpp" -o "$out.o"
  compile_ms=$((($(date +%s%N) - start) / 1000000))
  cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"d$depth.h\"" -I"$work" test/bench/bench_model.c "$out.o" \
    -lstdc++ -lm -o "$out-bench"
  read -r prefill decode arena < <("$out-bench" 128 64 3)
  weights=$(grep -o '[0-9]* bytes of weights' "$out.cpp" | head -1)
  echo "| $depth | ${weights% bytes of weights} B | $compile_ms ms | $prefill | $decode | $arena B |"
done
