#!/usr/bin/env bash
# First-call latency (docs/performance.md, "Tool calls: the first call"): needle3 from needle-synth
# (random weights, its trained 8,192-token tokenizer), compiled for this machine with the tools
# of examples/tools.json at depths 2, 8 and 20 and linked into examples/tool_call.c; the time
# NAME_call takes from a request's text on a fresh session, best of five, for four requests: the
# prompt's prefill alone (a declined request), and the whole call; and the whole call made again
# on the same session, which with --max-rollback 64 goes back to the prompt's prefix instead of
# feeding it again (docs/tool-calls.md, "A prompt fed once"). Not part of CI: run it by hand on a
# quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target needlec needle-synth >/dev/null
work=build/bench-calls
mkdir -p "$work"
[ -f "$work/needle3.needle" ] || build/bin/needle-synth --preset needle3 --seed 1 --quantized -o "$work/needle3.needle"
requests=("please set an alarm at 6:45 am for yoga" "sms zebra the meeting moved" "show me 5 results about volcanoes"
  "thank you")

# best_of_five PROGRAM REQUEST THRESHOLD: "MS TOKENS AGAIN_MS" of the fastest of five runs on fresh
# sessions, and the fastest of their second requests.
best_of_five() {
  local best= tokens= again= ms count second
  for _ in 1 2 3 4 5; do
    # tool_call prints "text to call: 12.3 ms, 504 tokens in the session (...)", then
    # "again, on the same session: 4.5 ms"
    read -r ms count second < <("$1" "$2" "$3" | sed -n -e 's/^text to call: \([0-9.]*\) ms, \([0-9]*\) tokens.*/\1 \2/p' \
      -e 's/^again, on the same session: \([0-9.]*\) ms/\1/p' | paste -sd' ')
    if [[ -z $best ]] || awk "BEGIN { exit !($ms < $best) }"; then
      best=$ms tokens=$count
    fi
    if [[ -z $again ]] || awk "BEGIN { exit !($second < $again) }"; then
      again=$second
    fi
  done
  echo "$best $tokens $again"
}

# Threshold 1 declines every request: the prompt's prefill alone. Threshold 0 answers each with a
# call (random weights write its strings until the session is full).
printf '%-5s %-40s %14s %11s %12s %8s %9s\n' depth request "prompt tokens" "prefill ms" "call tokens" "call ms" \
  "again ms"
for depth in 2 8 20; do
  out=$work/depth$depth
  mkdir -p "$out"
  build/bin/needlec "$work/needle3.needle" --layers "$depth" --tools examples/tools.json --max-seq 512 \
    --max-rollback 64 --name agent -o "$out/agent"
  cc -std=c11 -O2 -I "$out" examples/tool_call.c "$out/agent.o" -lm -o "$out/tool_call"
  for request in "${requests[@]}"; do
    read -r prefill prompt _ < <(best_of_five "$out/tool_call" "$request" 1)
    read -r call total again < <(best_of_five "$out/tool_call" "$request" 0)
    printf '%-5s %-40s %14s %11s %12s %8s %9s\n' "$depth" "$request" "$prompt" "$prefill" $((total - prompt)) "$call" \
      "$again"
  done
done
