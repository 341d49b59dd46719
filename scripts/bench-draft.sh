#!/usr/bin/env bash
# Whether drafting tokens would pay (docs/performance.md, "Drafting"; issue: every rung in one
# object): needle3 (random weights, CQ) at depths 20 and 2, compiled for the host with
# --max-rollback 8, exact and fast (--activations int8), linked into test/bench/bench_draft.c: at
# a 64-token context, k = 1, 2, 4, 8 tokens fed in one feed against k feeds of one, each taken back
# with NAME_truncate; with the weights warm (back to back) and cold (a 256 MiB pass evicts them
# before each measurement). Prints a markdown table: the cost of verifying k drafted tokens in one
# feed, relative to one token's step. Needs a build (scripts/build.sh). Timing only: not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-needle3.sh
work=build/bench-draft
mkdir -p "$work"
: >"$work/runs.txt"
for depth in 20 2; do
  for mode in exact fast; do
    flags=()
    [ "$mode" = fast ] && flags=(--activations int8)
    name=$mode$depth
    "$bin/needlec" "$model" --layers "$depth" --target host --max-rollback 8 "${flags[@]}" -o "$work/$name"
    cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"$name.h\"" -I"$work" test/bench/bench_draft.c \
      "$work/$name.o" -lm -o "$work/$name-bench"
    "$work/$name-bench" 64 20 256 | sed "s/^/$depth $mode /" >>"$work/runs.txt"
  done
done
/usr/bin/python3 - "$work/runs.txt" <<'PY'
import sys
cpu = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in open("/proc/cpuinfo")) if v}
print(f"CPU: {cpu.get('model name', '?')} (family {cpu.get('cpu family', '?')}, model {cpu.get('model', '?')}), one thread")
print()
print("| depth | kernels | weights | k | one feed of k | k feeds of 1 | one feed of k / one token's step |")
print("|---|---|---|---|---|---|---|")
runs = [line.split() for line in open(sys.argv[1])]
single = {(d, m, c): float(one) for d, m, c, k, one, each in runs if k == "1"}
for depth, mode, cache, k, one, each in runs:
    print(f"| {depth} | {mode} | {cache} | {k} | {float(one) / 1000:.2f} ms | {float(each) / 1000:.2f} ms | "
          f"{float(one) / single[(depth, mode, cache)]:.2f} |")
PY
