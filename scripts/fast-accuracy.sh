#!/usr/bin/env bash
# The fast mode's accuracy against the exact mode (docs/performance.md): needle3 (random weights,
# CQ) at depths 2, 8 and 20, compiled for the host with --activations float and with int8, both
# fed one stream of TOKENS tokens (default 512) one at a time by test/e2e/agreement.c. Prints a
# markdown table: top-1 agreement, the largest logit error relative to the exact mode's largest
# |logit| (worst step and mean), and the largest confidence difference. Needs a build
# (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-512}
bin=build/bin
work=build/fast-accuracy
mkdir -p "$work"
[ -f "$work/needle3.needle" ] || "$bin/needle-synth" --preset needle3 --seed 1 --quantized -o "$work/needle3.needle"

echo "| depth | tokens | top-1 agreement | largest logit error (worst step) | (mean step) | largest confidence error |"
echo "|---|---|---|---|---|---|"
for depth in 2 8 20; do
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --target host --name exact -o "$work/exact"
  "$bin/needlec" "$work/needle3.needle" --layers "$depth" --target host --name fast --activations int8 -o "$work/fast"
  cc -std=c11 -O2 -I"$work" test/e2e/agreement.c "$work/exact.o" "$work/fast.o" -lm -o "$work/agreement"
  # tokens N top-1 A/N (P%) logit-error max M mean E confidence-error C
  "$work/agreement" "$tokens" | awk -v depth="$depth" \
    '{ printf "| %s | %s | %s %s | %s | %s | %s |\n", depth, $2, $4, $5, $8, $10, $12 }'
done
