#!/usr/bin/env bash
# The main job on the built-in default model: synthesize the needle3 preset (121M parameters,
# random weights: no real Needle weights are available here), compile it to an 8-block .needle,
# and run the reference interpreter on a few tokens, printing its answer and its speed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin=build/bin
work=build/demo
mkdir -p "$work"

echo "== needle-synth: the needle3 preset (float16 safetensors)"
[ -f "$work/needle3/model.safetensors" ] || "$bin/needle-synth" --preset needle3 --seed 1 -o "$work/needle3"
ls -l "$work/needle3"

echo "== needlec: merge nothing, quantize to CQ, slice to 8 blocks"
start=$(date +%s%N)
"$bin/needlec" "$work/needle3" --layers 8 --emit needle --stats -o "$work/needle3-8.needle"
echo "compile time: $((($(date +%s%N) - start) / 1000000)) ms"
"$bin/needlec" "$work/needle3" --emit needle --stats -o "$work/needle3.needle" | grep -E "file bytes|overhead"

echo "== needle-run: the reference interpreter, token by token"
"$bin/needle-run" "$work/needle3-8.needle" --tokens 17,4242,9,1024,77,3,8000,123 --time
