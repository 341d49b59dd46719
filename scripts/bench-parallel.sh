#!/usr/bin/env bash
# A session on every core (docs/c-interface.md, "Every core"): needle3 (random weights, CQ) at
# depths 2, 8 and 20, compiled for the host, linked into test/bench/bench_model.c and timed through
# the C interface with no pool and with a pool of 2 threads (examples/pools/pool_threads.c): a
# 128-token prefill in one feed, then 64 tokens decoded one at a time, best of 3 repeats in each of
# 3 rounds (the best round counts: this machine's speed drifts). Beside it, in the same run, ggml's
# Q2_K matvec (../shared/peers/ggml-matvec.sh, never linked) with 1 and 2 threads. Prints markdown
# tables (docs/performance.md). Needs a build (scripts/build.sh). Timing only: this is not a test.
#
#   scripts/bench-parallel.sh [PEERS_DIR]     default: ../shared/peers beside this repository
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${1:-../shared/peers}
bin=build/bin
work=build/bench-parallel
model=$work/needle3.needle
mkdir -p "$work"
[ -f "$model" ] || "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$model"

for depth in 2 8 20; do
  "$bin/needlec" "$model" --layers "$depth" -o "$work/obj$depth"
  cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"obj$depth.h\"" -I"$work" -Iexamples \
    test/bench/bench_model.c examples/pools/pool_threads.c "$work/obj$depth.o" -lm -pthread -o "$work/bench$depth"
done
: >"$work/runs.txt"
for round in 1 2 3; do
  for depth in 2 8 20; do
    for threads in 1 2; do
      echo "$depth $threads $("$work/bench$depth" 128 64 3 "$threads")" >>"$work/runs.txt"
    done
  done
done
ggml_case="type_a=q2_K,type_b=f32,m=4096,n=(1|512),k=14336"
if [ -x "$peers/ggml-matvec.sh" ]; then
  for threads in 1 2; do
    GGML_PEER_THREADS=$threads bash "$peers/ggml-matvec.sh" "$ggml_case" | sed "s/^/$threads /"
  done >"$work/ggml.txt"
else
  echo "bench-parallel: no $peers/ggml-matvec.sh: ggml left out" >&2
  : >"$work/ggml.txt"
fi

/usr/bin/python3 - "$work/runs.txt" "$work/ggml.txt" <<'PY'
import re, sys
best = {}  # (depth, threads) -> [prefill, decode] tokens/s, the best round of each
for line in open(sys.argv[1]):
    depth, threads, prefill, decode = line.split()[:4]
    key = (int(depth), int(threads))
    old = best.get(key, [0.0, 0.0])
    best[key] = [max(old[0], float(prefill)), max(old[1], float(decode))]
print(f"| needle3 depth | prefill 1 thread | prefill 2 threads | speed-up | decode 1 thread | decode 2 threads | speed-up |")
print("|---|---|---|---|---|---|---|")
for depth in (2, 8, 20):
    (p1, d1), (p2, d2) = best[(depth, 1)], best[(depth, 2)]
    print(f"| {depth} | {p1:.0f} tokens/s | {p2:.0f} | {p2 / p1:.2f}x | {d1:.0f} tokens/s | {d2:.0f} | {d2 / d1:.2f}x |")
ggml = {}  # (threads, n) -> seconds per run
for line in open(sys.argv[2]):
    m = re.search(r"^(\d+) .*type_a=q2_K,.*m=4096,n=(\d+),k=14336.*?([\d.]+) us/run", line)
    if m:
        ggml[(int(m.group(1)), int(m.group(2)))] = float(m.group(3)) * 1e-6
if ggml:
    print()
    print("| ggml Q2_K 4096 x 14336 | 1 thread | 2 threads | speed-up |")
    print("|---|---|---|---|")
    for n in (1, 512):
        one, two = ggml.get((1, n)), ggml.get((2, n))
        if one and two:
            unit = (lambda s: f"{4096 * 14336 / s / 1e9:.1f} G weights/s") if n == 1 else \
                   (lambda s: f"{2 * 4096 * 14336 * n / s / 1e9:.1f} GFLOPS")
            print(f"| {n} token{'s' if n > 1 else ''} | {unit(one)} | {unit(two)} | {one / two:.2f}x |")
PY
