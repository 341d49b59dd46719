#!/usr/bin/env bash
# The main job on the built-in default model: synthesize the needle3 preset (121M parameters,
# random weights: no real Needle weights are available here; a tokenizer needle-synth trains),
# quantize it to CQ, compile it at 8 blocks with needlec, the tokenizer included, to an object
# for this machine and to one for aarch64, link each into the example C program (text in, greedy
# decoding and text out through the C interface), run both (aarch64 under qemu-user), print what
# they produced and how fast, and check that the two agree; and with the example's tools compiled
# in, turn a request into a tool call (valid whatever the weights: docs/tool-calls.md). Then
# train a tiny model on those tools (needle-train) and print its calls at depths 2, 4 and 6, on
# the host, on aarch64 and on wasm32 in Node (docs/training.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin=build/bin
work=build/demo
prompt="The license"
mkdir -p "$work"

echo "== needle-synth: the needle3 preset (float16 safetensors, a trained 8,192-token tokenizer)"
[ -f "$work/needle3/tokenizer.json" ] || "$bin/needle-synth" --preset needle3 --seed 1 -o "$work/needle3"
ls -l "$work/needle3"

echo "== needlec: quantize to CQ (embedding=4,mhc=4,default=2)"
"$bin/needlec" "$work/needle3" --emit needle --stats -o "$work/needle3.needle" | grep -E "parameters|bits|file bytes"

echo "== needlec --emit obj (host) at 8 blocks, linked into examples/greedy_decode.c and tool_call.c by needle_add_model()"
cmake -S examples -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEEDLE_MODEL="$PWD/$work/needle3.needle" \
  -DNEEDLE_LAYERS=8 -DNEEDLEC_EXECUTABLE="$PWD/$bin/needlec" >/dev/null
start=$(date +%s%N)
cmake --build "$work/example"
echo "compile and build time: $((($(date +%s%N) - start) / 1000000)) ms"
ls -l "$work/example/model.o" "$work/example/greedy_decode" "$work/example/agent.o" "$work/example/tool_call"

echo "== greedy decoding with the compiled model (host)"
"$work/example/greedy_decode" "$prompt" 32 | tee "$work/host.txt"
ids=$(sed -n 's/^prompt: //p' "$work/host.txt" | tr ' ' ',')

echo "== the same on every core: a pool of $(nproc) threads lent to the session (examples/pools)"
"$work/example/greedy_decode" "$prompt" 32 --threads "$(nproc)" | tee "$work/threads.txt" | grep -E "thread|prefill"
if ! diff <(grep generated "$work/host.txt") <(grep generated "$work/threads.txt"); then
  echo "the tokens differ with $(nproc) threads" && exit 1
fi

echo "== a tool call from text (examples/tool_call.c: the tools of examples/tools.json compiled in)"
"$work/example/tool_call" "Wake me up at seven tomorrow" 0.5

echo "== needlec --target aarch64 at 8 blocks, linked by aarch64-linux-gnu-gcc, run under qemu-aarch64"
mkdir -p "$work/aarch64"
"$bin/needlec" "$work/needle3.needle" --layers 8 --target aarch64 --name model --stats -o "$work/aarch64/model" |
  grep -E "target:|time: total"
aarch64-linux-gnu-gcc -std=c11 -O2 -I "$work/aarch64" -I examples examples/greedy_decode.c \
  examples/pools/pool_threads.c "$work/aarch64/model.o" -lm -pthread -o "$work/aarch64/greedy_decode"
qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
"${qemu[@]}" "$work/aarch64/greedy_decode" "$prompt" 32 | tee "$work/aarch64.txt"

echo "== host and aarch64 agree: the same tokens, and the prompt's outputs within 1e-4"
if diff <(grep -E "generated|confidence" "$work/host.txt") <(grep -E "generated|confidence" "$work/aarch64.txt"); then
  echo "same generated tokens and confidence"
else
  echo "the generated tokens differ (see above)" && exit 1
fi
host_cc=(cc -std=c11 -O2 -DNEEDLE_NAME=model '-DNEEDLE_HEADER="model.h"')
"${host_cc[@]}" -I "$work/example" test/e2e/run_model.c "$work/example/model.o" -lm -o "$work/run-host"
aarch64-linux-gnu-gcc "${host_cc[@]:1}" -I "$work/aarch64" test/e2e/run_model.c "$work/aarch64/model.o" -lm \
  -o "$work/run-aarch64"
"$work/run-host" all "$ids" "$work/out-host"
"${qemu[@]}" "$work/run-aarch64" all "$ids" "$work/out-aarch64"
/usr/bin/python3 test/lit/Inputs/close.py "$work/out-aarch64" "$work/out-host"

echo "== the reference interpreter on the prompt (its top token must be the first one generated)"
"$bin/needle-run" "$work/needle3.needle" --layers 8 --text "$prompt" --time

echo "== needle-train: a tiny ladder model (d_model 128, 6 blocks, a window of 64) trained to call the tools of examples/tools.json"
# Trained once (about a quarter of an hour) and reused while the command that trained it is the same.
agent="$work/agent"
train=("$bin/needle-train" --tools examples/tools.json --tasks examples/tools.tasks.json --set vocab_size=1024
  --set sliding_window=64 --set qk_head_dim=32 --set v_head_dim=32 --steps "${NEEDLE_DEMO_STEPS:-1000}" --threads 2 --seed 1 -o "$agent")
if [ "$(cat "$agent/trained-by" 2>/dev/null)" != "${train[*]}" ]; then
  start=$(date +%s)
  "${train[@]}" | tail -n 1
  echo "${train[*]}" >"$agent/trained-by"
  echo "training time: $(($(date +%s) - start)) s"
fi
# Sentences and words training never saw (docs/training.md, "The task").
requests=("please set an alarm at 6:45 am for yoga" "text olivia saying dinner ready soon"
  "find 5 results on volcanoes" "search the news for guitars, 3 results" "how are you today")

echo "== the trained model's calls at depths 2, 4 and 6, compiled from the same weights, on the host, on aarch64 and on wasm32 in Node"
qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
declare -A compiler=([host]="cc" [aarch64]="aarch64-linux-gnu-gcc" [wasm32]="clang-19 --target=wasm32-wasi")
declare -A runner=([aarch64]="${qemu[*]}" [wasm32]="node examples/run_wasi.mjs")
for depth in 2 4 6; do
  for target in host aarch64 wasm32; do
    out="$work/agent-$target-$depth"
    mkdir -p "$out"
    "$bin/needlec" "$agent" --layers "$depth" --tools examples/tools.json --prompt "$agent/prompt.txt" --name agent \
      --target "$target" -o "$out/agent"
    ${compiler[$target]} -std=c11 -O2 -I "$out" examples/tool_call.c "$out/agent.o" -lm -o "$out/tool_call"
  done
  for request in "${requests[@]}"; do
    host=$("$work/agent-host-$depth/tool_call" "$request" 0.5)
    answer=$(grep -E "^(call|no call)" <<<"$host")
    agree=()
    for target in aarch64 wasm32; do
      other=$(${runner[$target]} "$work/agent-$target-$depth/tool_call" "$request" 0.5 | grep -E "^(call|no call)")
      agree+=("$([ "$answer" = "$other" ] && echo "$target agrees" || echo "${target^^} DIFFERS")")
    done
    printf 'depth %s  %-34s -> %s  (%s, %s, %s)\n' "$depth" "\"$request\"" "$answer" \
      "$(sed -n 's/^text to call: \([0-9.]* ms\).*/\1/p' <<<"$host")" "${agree[0]}" "${agree[1]}"
  done
done
