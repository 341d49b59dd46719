#!/usr/bin/env bash
# Both backends side by side in one run, one thread: needle3 (random weights, CQ) at depths 2, 8
# and 20, compiled with --emit cpp (built by g++ -O2 -march=native), with --emit obj --target
# host, and with that and --activations int8 (the fast mode), linked into test/bench/bench_model.c
# and timed through the C interface (best of 3: a 128-token prefill in one feed, then 64 tokens
# decoded one at a time; and the best of 3 rounds, below), beside the two rooflines: CQ bytes a
# token streams (needle-bench's accounting) over the read bandwidth measured, in this run's best
# round, at the model's working set and at DRAM size (512 MiB), and the CPU's vector throughput
# (the exact CQ2 kernel's compute bound). Prints markdown tables (docs/performance.md), and depth
# 8 at a 2000-token context. Needs a build (scripts/build.sh).
# Timing only: this is not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
rounds=${NEEDLE_BENCH_ROUNDS:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-backends.sh: NEEDLE_BENCH_ROUNDS must be 1 or more" >&2; exit 1; }
work=build/bench-backends
mkdir -p "$work"
[ -f "$work/needle3.needle" ] || "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$work/needle3.needle"

# CQ bytes per token, from needle-bench in this run.
build/test/bench/needle-bench --benchmark_filter='BM_ReferenceDecode' \
  --benchmark_out="$work/figures.json" --benchmark_out_format=json >/dev/null

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
# link_bench NAME [LIB...]: $work/NAME.o into test/bench/bench_model.c as $work/NAME-bench.
link_bench() {
  local name=$1
  shift
  cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"$name.h\"" -I"$work" -Iexamples test/bench/bench_model.c \
    examples/pools/pool_threads.c "$work/$name.o" "$@" -lm -pthread -o "$work/$name-bench"
}
# object NAME [FLAG...]: needle3 at $depth compiled for the host with needlec's FLAGs and linked;
# its compile time into compile.txt.
object() {
  local name=$1 start
  shift
  start=$(date +%s%N)
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --target host "$@" -o "$work/$name$depth"
  echo "$depth $name $(ms "$start")" >>"$work/compile.txt"
  link_bench "$name$depth"
}
: >"$work/compile.txt"
for depth in 2 8 20; do
  start=$(date +%s%N)
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --emit cpp -o "$work/cpp$depth"
  c++ -std=c++17 -O2 -march=native -c "$work/cpp$depth.cpp" -o "$work/cpp$depth.o"
  echo "$depth cpp $(ms "$start")" >>"$work/compile.txt"
  link_bench "cpp$depth" -lstdc++
  object obj
  object fast --activations int8
done

# Timing in rounds (NEEDLE_BENCH_ROUNDS, 3 by default), each the read bandwidth at the working
# sets, the vector throughput and every model's run: this machine's speed drifts over seconds
# (other tenants), so each figure is its best round, the bandwidth too, and a ratio compares two
# figures of a quiet moment.
rm -f "$work"/bandwidth*.json
: >"$work/runs.txt"
for round in $(seq "$rounds"); do
  build/test/bench/needle-bench --benchmark_filter='BM_ReadBandwidth|BM_VectorThroughput' \
    --benchmark_out="$work/bandwidth$round.json" --benchmark_out_format=json >/dev/null
  for depth in 2 8 20; do
    for name in cpp obj fast; do
      figures=$("$work/$name$depth-bench" 128 64 3)
      echo "$depth $name $figures" >>"$work/runs.txt"
    done
  done
done
for name in cpp obj fast; do # a long context: attention over 2000 positions
  figures=$("$work/${name}8-bench" 2000 64 1)
  echo "$name $figures"
done >"$work/long.txt"

/usr/bin/python3 - "$work/figures.json" "$work/runs.txt" "$work/long.txt" "$work/compile.txt" "$work"/bandwidth*.json <<'PY'
import json, sys
figures = json.load(open(sys.argv[1]))["benchmarks"]
rounds = [json.load(open(path))["benchmarks"] for path in sys.argv[5:]]
NAMES = {"cpp": "C++ (g++ -O2 -march=native)", "obj": "object (--target host)",
         "fast": "object, fast (--activations int8)"}
bandwidth = {}  # MiB -> the best round's read bytes/s
vector_ops = 0  # the best round's zmm operations/s (0: no AVX-512F here)
for figure in (b for run in rounds for b in run):
    if figure["name"].startswith("BM_ReadBandwidth/"):
        size = int(figure["name"].split("/")[1])
        bandwidth[size] = max(bandwidth.get(size, 0), figure["read bytes/s"])
    else:
        vector_ops = max(vector_ops, figure.get("vector ops/s", 0))
compile_ms = {(int(d), name): int(ms) for d, name, ms in (line.split() for line in open(sys.argv[4]))}
best = {}  # (depth, backend) -> [prefill, decode, arena, heads]: the best round's of each
for line in open(sys.argv[2]):
    depth, backend, prefill, decode, arena, heads = line.split()
    key, now = (int(depth), backend), [float(prefill), float(decode), int(arena), float(heads)]
    was = best.setdefault(key, now)
    best[key] = [max(was[0], now[0]), max(was[1], now[1]), now[2], min(was[3], now[3])]
bytes_per_token = {int(b["name"].split("/")[1]): b["CQ bytes/token"] for b in figures
                   if b["name"].startswith("BM_ReferenceDecode")}
cpu = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in open("/proc/cpuinfo")) if v}
print(f"CPU: {cpu.get('model name', '?')} (family {cpu.get('cpu family', '?')}, model {cpu.get('model', '?')})")
print("read bandwidth: " + ", ".join(f"{size} MiB {bw / 1e9:.1f} GB/s" for size, bw in sorted(bandwidth.items())))
if vector_ops:  # the exact CQ2 kernel on AVX-512 issues 20 such operations per 64 bytes of codes
    print(f"vector throughput: {vector_ops / 1e9:.1f} G zmm ops/s (vpermps and vaddps): the exact CQ2 kernel's "
          f"compute bound, at 20 a 64-byte chunk, is {vector_ops * 64 / 20 / 1e9:.1f} GB/s of codes")
print()
print("| depth | backend | compile | prefill 128 tok/s | decode tok/s | CQ bytes/token | working-set roofline | decode / it | DRAM roofline | decode / it | heads (confidence + embedding, asked) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (depth, backend), (prefill, decode, arena, heads) in best.items():
    ms = compile_ms[(depth, backend)]
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
