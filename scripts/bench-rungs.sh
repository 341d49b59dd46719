#!/usr/bin/env bash
# Every rung in one object against one object per depth (docs/performance.md, "Every rung in one
# object"): needle3 (random weights, CQ) compiled for the host with --layers 2..20 and with each
# --layers D alone. Prints markdown: compile time and sizes (the file, its code, its weights);
# prefill and decode tokens/s of the one object at each of DEPTHS against the object of that depth
# (test/bench/bench_model.c, best of 3, one thread); and NAME_reopen_depth against a fresh
# prefill of the same tokens (test/bench/bench_reopen.c). Needs a build (scripts/build.sh).
# Timing only: not a test.
#
#   scripts/bench-rungs.sh [DEPTHS...]      default 2 4 8 14 20
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-needle3.sh
work=build/bench-rungs
mkdir -p "$work"
depths=("$@")
[ ${#depths[@]} -gt 0 ] || depths=(2 4 8 14 20)

# compile NAME LAYERS: $work/NAME.o, and "NAME milliseconds file_bytes code_bytes weights_bytes" on stdout.
compile() {
  local name=$1 layers=$2 start end
  start=$(date +%s%N)
  "$bin/needlec" "$model" --layers "$layers" --target host -o "$work/$name"
  end=$(date +%s%N)
  local text weights
  text=$(size -A "$work/$name.o" | awk '$1 ~ /^\.text/ {sum += $2} END {print sum}')
  weights=$(llvm-nm-19 -S "$work/$name.o" | awk '$4 == "needle_weights" {print $2}')
  weights=$((16#$weights))
  echo "$name $(((end - start) / 1000000)) $(stat -c %s "$work/$name.o") $text $weights"
}

# link NAME MAIN: MAIN.c built with $work/NAME.o as $work/NAME-MAIN.
link() {
  cc -std=c11 -O2 -DNEEDLE_NAME=needle_model "-DNEEDLE_HEADER=\"$1.h\"" -I"$work" -Iexamples "test/bench/$2.c" \
    examples/pools/pool_threads.c "$work/$1.o" -lm -pthread -o "$work/$1-$2"
}

compile rungs 2..20 >"$work/sizes.txt"
for depth in $(seq 2 20); do
  compile "d$depth" "$depth" >>"$work/sizes.txt"
done
link rungs bench_model
link rungs bench_reopen
: >"$work/speed.txt"
for depth in "${depths[@]}"; do
  link "d$depth" bench_model
  echo "$depth rungs $("$work/rungs-bench_model" 128 64 3 1 "$depth")" >>"$work/speed.txt"
  echo "$depth alone $("$work/d$depth-bench_model" 128 64 3 1)" >>"$work/speed.txt"
done
: >"$work/reopen.txt"
for move in "4 20" "20 4" "2 8" "8 20"; do
  echo "$move $("$work/rungs-bench_reopen" 128 $move 3)" >>"$work/reopen.txt"
done

/usr/bin/python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
cpu = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in open("/proc/cpuinfo")) if v}
print(f"CPU: {cpu.get('model name', '?')}, one thread; needle3, random weights, CQ, exact kernels")
print()
sizes = {name: (int(ms) / 1000, int(f), int(t), int(w)) for name, ms, f, t, w in (l.split() for l in open(f"{work}/sizes.txt"))}
alone = [sizes[f"d{d}"] for d in range(2, 21)]
mb = lambda b: f"{b / 1e6:.2f} MB"
print("| object | compile | file | code (.text) | weights |")
print("|---|---|---|---|---|")
for name, label in [("rungs", "--layers 2..20"), ("d20", "--layers 20")]:
    s, f, t, w = sizes[name]
    print(f"| {label} | {s:.1f} s | {mb(f)} | {mb(t)} | {mb(w)} |")
print(f"| 19 objects, --layers 2 ... 20 | {sum(a[0] for a in alone):.1f} s | {mb(sum(a[1] for a in alone))} | "
      f"{mb(sum(a[2] for a in alone))} | {mb(sum(a[3] for a in alone))} |")
print()
print(f"One object of every rung: {sizes['rungs'][1] / sizes['d20'][1]:.3f} x the depth-20 object's file.")
print()
print("| depth | prefill, one object | prefill, depth alone | decode, one object | decode, depth alone |")
print("|---|---|---|---|---|")
speed = {}
for line in open(f"{work}/speed.txt"):
    depth, kind, prefill, decode, arena, heads = line.split()
    speed[(depth, kind)] = (float(prefill), float(decode))
for depth in dict.fromkeys(d for d, _ in speed):
    (pr, dr), (pa, da) = speed[(depth, "rungs")], speed[(depth, "alone")]
    print(f"| {depth} | {pr:.1f} tok/s ({pr / pa - 1:+.1%}) | {pa:.1f} tok/s | {dr:.1f} tok/s ({dr / da - 1:+.1%}) | {da:.1f} tok/s |")
print()
print("| reopen_depth, 128 tokens held | reopen | fresh prefill at the new depth |")
print("|---|---|---|")
for line in open(f"{work}/reopen.txt"):
    frm, to, reopen, prefill = line.split()
    print(f"| {frm} -> {to} | {int(reopen) / 1000:.1f} ms | {int(prefill) / 1000:.1f} ms |")
PY
