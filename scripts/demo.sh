#!/usr/bin/env bash
# The main job on the built-in default model: synthesize the needle3 preset (121M parameters,
# random weights: no real Needle weights are available here), quantize it to CQ, compile it at
# 8 blocks to standalone C++ with needlec, link it into the example C program (greedy decoding
# through the C interface), run it, and print what it produced and how fast.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin=build/bin
work=build/demo
prompt=17,4242,9,1024,77
mkdir -p "$work"

echo "== needle-synth: the needle3 preset (float16 safetensors)"
[ -f "$work/needle3/model.safetensors" ] || "$bin/needle-synth" --preset needle3 --seed 1 -o "$work/needle3"
ls -l "$work/needle3"

echo "== needlec: quantize to CQ (embedding=4,mhc=4,default=2)"
"$bin/needlec" "$work/needle3" --emit needle --stats -o "$work/needle3.needle" | grep -E "parameters|bits|file bytes"

echo "== needlec --emit cpp at 8 blocks, built into examples/greedy_decode.c by needle_add_model()"
cmake -S examples -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEEDLE_MODEL="$PWD/$work/needle3.needle" \
  -DNEEDLE_LAYERS=8 -DNEEDLEC_EXECUTABLE="$PWD/$bin/needlec" >/dev/null
start=$(date +%s%N)
cmake --build "$work/example"
echo "compile and build time: $((($(date +%s%N) - start) / 1000000)) ms"
ls -l "$work/example/model.cpp" "$work/example/greedy_decode"

echo "== greedy decoding with the compiled model"
"$work/example/greedy_decode" "$prompt" 32

echo "== the reference interpreter on the prompt (its top token must be the first one generated)"
"$bin/needle-run" "$work/needle3.needle" --layers 8 --tokens "$prompt" --time
