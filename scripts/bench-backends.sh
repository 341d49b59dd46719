#!/usr/bin/env bash
# Both backends side by side in one run, one thread: needle3 (random weights, CQ) at depths 2, 8
# and 20, compiled with --emit cpp (built by g++ -O2 -march=native), with --emit obj --target
# host, and with that and --activations int8 (the fast mode), linked into test/bench/bench_model.c and timed through the C interface (best of 3: a
# 128-token prefill in one feed, then 64 tokens decoded one at a time), beside the two rooflines:
# CQ bytes a token streams (needle-bench's accounting) over the read bandwidth measured, in this
# run, at the model's working set and at DRAM size (512 MiB). Prints markdown tables
# (docs/performance.md), and depth 8 at a 2000-token context. Needs a build (scripts/build.sh).
# Timing only: this is not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
work=build/bench-backends
mkdir -p "$work"
[ -f "$work/needle3.needle" ] || "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$work/needle3.needle"

# Read bandwidth and CQ bytes per token, from needle-bench in this run.
build/test/bench/needle-bench --benchmark_filter='BM_ReadBandwidth|BM_ReferenceDecode' \
  --benchmark_out="$work/figures.json" --benchmark_out_format=json >/dev/null

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
# object NAME [FLAG...]: needle3 at $depth compiled for the host with needlec's FLAGs, linked and
# timed: one line of runs.txt.
object() {
  local name=$1 out="$work/$1$depth" start
  shift
  start=$(date +%s%N)
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --target host "$@" -o "$out"
  local compile_ms
  compile_ms=$(ms "$start")
  cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"$name$depth.h\"" -I"$work" test/bench/bench_model.c \
    "$out.o" -lm -o "$out-bench"
  echo "$depth $name $compile_ms $("$out-bench" 128 64 3)" >>"$work/runs.txt"
}
: >"$work/runs.txt"
for depth in 2 8 20; do
  out="$work/cpp$depth"
  start=$(date +%s%N)
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --emit cpp -o "$out"
  c++ -std=c++17 -O2 -march=native -c "$out.cpp" -o "$out.o"
  cpp_ms=$(ms "$start")
  cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"cpp$depth.h\"" -I"$work" test/bench/bench_model.c \
    "$out.o" -lstdc++ -lm -o "$out-bench"
  echo "$depth cpp $cpp_ms $("$out-bench" 128 64 3)" >>"$work/runs.txt"

  object obj
  object fast --activations int8
  if [ "$depth" = 8 ]; then # a long context: attention over 2000 positions
    echo "cpp $("$work/cpp8-bench" 2000 64 1)" >"$work/long.txt"
    echo "obj $("$work/obj8-bench" 2000 64 1)" >>"$work/long.txt"
    echo "fast $("$work/fast8-bench" 2000 64 1)" >>"$work/long.txt"
  fi
done

/usr/bin/python3 - "$work/figures.json" "$work/runs.txt" "$work/long.txt" <<'PY'
import json, sys
figures = json.load(open(sys.argv[1]))["benchmarks"]
NAMES = {"cpp": "C++ (g++ -O2 -march=native)", "obj": "object (--target host)",
         "fast": "object, fast (--activations int8)"}
bandwidth = {int(b["name"].split("/")[1]): b["read bytes/s"] for b in figures if b["name"].startswith("BM_ReadBandwidth")}
bytes_per_token = {int(b["name"].split("/")[1]): b["CQ bytes/token"] for b in figures
                   if b["name"].startswith("BM_ReferenceDecode")}
print("read bandwidth: " + ", ".join(f"{size} MiB {bw / 1e9:.1f} GB/s" for size, bw in sorted(bandwidth.items())))
print()
print("| depth | backend | compile | prefill 128 tok/s | decode tok/s | CQ bytes/token | working-set roofline | decode / it | DRAM roofline | decode / it | heads (confidence + embedding, asked) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[2]):
    depth, backend, ms, prefill, decode, arena, heads = line.split()
    depth, decode = int(depth), float(decode)
    b = bytes_per_token[depth]
    size = min(s for s in bandwidth if s != 512 and s * 2**20 >= b) if any(s * 2**20 >= b for s in bandwidth if s != 512) else 512
    ws, dram = bandwidth[size] / b, bandwidth[512] / b
    name = NAMES[backend]
    print(f"| {depth} | {name} | {int(ms) / 1000:.1f} s | {float(prefill):.0f} | {decode:.0f} | {b / 1e6:.2f} MB | "
          f"{ws:,.0f} tok/s ({size} MiB) | {100 * decode / ws:.1f}% | {dram:,.0f} tok/s | {100 * decode / dram:.1f}% | "
          f"{float(heads):.0f} µs |")
print()
print("Depth 8 at a long context: a 2000-token prefill in one feed, then 64 tokens decoded one at a time.")
print()
print("| backend | prefill 2000 tok/s | decode tok/s after it |")
print("|---|---|---|")
for line in open(sys.argv[3]):
    backend, prefill, decode, arena, heads = line.split()
    print(f"| {NAMES[backend]} | {float(prefill):.0f} | {float(decode):.0f} |")
PY
