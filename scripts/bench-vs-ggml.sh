#!/usr/bin/env bash
# Our CQ kernels beside ggml's (llama.cpp's tensor library) in one run, one thread: ggml's own
# MUL_MAT benchmark (../shared/peers/ggml-matvec.sh, which builds it once into ~/.cache; never
# linked, never copied) on its 4096 x 14336 Q2_K case for one token and for 512, then needle-bench's
# BM_RuntimeCq on a CQ2 matrix of ours of that shape and on needle3's shapes, exact and fast
# (--activations int8); then
# scripts/bench-backends.sh for needle3's prefill and decode tokens/s at depths 2, 8 and 20 beside
# the rooflines. Prints markdown tables (docs/performance.md). Timing only: this is not a test.
#
#   scripts/bench-vs-ggml.sh [PEERS_DIR]     default: ../shared/peers beside this repository
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${1:-../shared/peers}
work=build/bench-vs-ggml
mkdir -p "$work"
[ -x "$peers/ggml-matvec.sh" ] || { echo "bench-vs-ggml: no $peers/ggml-matvec.sh (give the peers' directory)" >&2; exit 1; }

bash "$peers/ggml-matvec.sh" "type_a=q2_K,type_b=f32,m=4096,n=(1|512),k=14336" >"$work/ggml.txt"
build/test/bench/needle-bench --benchmark_filter='BM_RuntimeCq/' --benchmark_out="$work/ours.json" \
  --benchmark_out_format=json >/dev/null

python3 - "$work/ggml.txt" "$work/ours.json" <<'EOF'
import json, re, sys

ggml = {}  # n -> seconds per run
for line in open(sys.argv[1]):
    m = re.search(r"type_a=q2_K,.*m=4096,n=(\d+),k=14336.*?([\d.]+) us/run", line)
    if m:
        ggml[int(m.group(1))] = float(m.group(2)) * 1e-6

ours = {}  # (rows, cols, bits, n, kernel) -> seconds; kernel 0 portable, 1 exact AVX2, 2 fast AVX2, 3 exact AVX-512,
#           4 fast AVX-512 VNNI, 5 exact AVX-512 VNNI
for b in json.load(open(sys.argv[2]))["benchmarks"]:
    if b.get("error_occurred"):
        continue
    args = dict(re.findall(r"(\w+):(\d+)", b["name"]))
    key = tuple(int(args[k]) for k in ("rows", "cols", "bits", "n", "kernel"))
    ours[key] = b["real_time"] * {"us": 1e-6, "ms": 1e-3, "ns": 1e-9}[b["time_unit"]]

def rate(seconds, rows, cols, n):
    """weights/s (one token) or GFLOPS (n tokens) of one run."""
    if seconds is None:
        return "—"
    return f"{rows * cols / seconds / 1e9:.1f} G weights/s" if n == 1 else f"{2 * rows * cols * n / seconds / 1e9:.1f} GFLOPS"

def ratio(g, a):
    return f"{g / a:.2f}x" if g and a else "—"

def best(*times):
    """The fastest of the kernels measured (on this CPU, the one a compiled model gets, or as fast)."""
    return min((t for t in times if t), default=None)

print("| shape (rows x cols x tokens) | ggml Q2_K | ours CQ2 exact, AVX2 | ours CQ2 exact, AVX-512 "
      "| ours CQ2 exact, AVX-512 VNNI | ours CQ2 exact, portable | ours CQ2 fast, AVX2 | ours CQ2 fast, AVX-512 VNNI "
      "| exact / ggml | fast / ggml |")
print("|---|---|---|---|---|---|---|---|---|---|")
for n in (1, 512):
    g = ggml.get(n)
    p, a, f, z, v, e = (ours.get((4096, 14336, 2, n, k)) for k in (0, 1, 2, 3, 4, 5))
    print(f"| 4096 x 14336 x {n} | {rate(g, 4096, 14336, n)} | {rate(a, 4096, 14336, n)} | {rate(z, 4096, 14336, n)} | "
          f"{rate(e, 4096, 14336, n)} | {rate(p, 4096, 14336, n)} | {rate(f, 4096, 14336, n)} | "
          f"{rate(v, 4096, 14336, n)} | {ratio(g, best(a, z, e))} | {ratio(g, best(f, v))} |")
print()
print("needle3's shapes, ours alone:")
print()
print("| shape (rows x cols x tokens, bits) | exact AVX2 | exact AVX-512 | exact AVX-512 VNNI | exact portable | fast AVX2 "
      "| fast AVX-512 VNNI | time exact (best) | time fast (best) |")
print("|---|---|---|---|---|---|---|---|---|")
micro = lambda t: f"{t * 1e6:.0f} µs" if t else "—"
for rows, cols, bits, n in sorted({k[:4] for k in ours if k[:2] != (4096, 14336)}):
    p, a, f, z, v, e = (ours.get((rows, cols, bits, n, k)) for k in (0, 1, 2, 3, 4, 5))
    print(f"| {rows} x {cols} x {n}, CQ{bits} | {rate(a, rows, cols, n)} | {rate(z, rows, cols, n)} | "
          f"{rate(e, rows, cols, n)} | {rate(p, rows, cols, n)} | {rate(f, rows, cols, n)} | {rate(v, rows, cols, n)} | "
          f"{micro(best(a, z, e))} | {micro(best(f, v))} |")
EOF
echo
bash scripts/bench-backends.sh | sed -n '/^CPU:/,$p'
