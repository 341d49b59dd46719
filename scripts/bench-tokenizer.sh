#!/usr/bin/env bash
# The compiled tokenizer's speed beside the npm tokenizers' on the same text (docs/tokenizer.md,
# "Speed"): needlec's runtime in process (tokenizer-bench, both layouts of needlec
# --tokenizer-tables), @huggingface/tokenizers and
# tiktoken's WASM under Node (test/tokenizer/bench.mjs), each encoding the whole text, best of
# three. The text: Debian's license texts and package copyright files, at least 1 MB (4 MB by
# default; BENCH_TEXT_BYTES to change). Not part of CI: run it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake --build build --target tokenizer-bench >/dev/null
bytes=${BENCH_TEXT_BYTES:-4000000}
text=$(mktemp)
trap 'rm -f "$text"' EXIT
# head stops the pipe early on purpose: pipefail would call that a failure.
(set +o pipefail; cat /usr/share/common-licenses/* /usr/share/doc/*/copyright 2>/dev/null |
  iconv -f utf-8 -t utf-8 -c | head -c "$bytes" >"$text")
# Cut at a line end, so the text is whole UTF-8 lines.
head -n -1 "$text" >"$text.cut" && mv "$text.cut" "$text"
echo "text: $(wc -c <"$text") bytes"
npm=build-npm/node_modules/@lenml
for pair in "gpt4 cl100k_base" "llama3" "gpt2 gpt2" "llama2"; do
  read -r name encoding <<<"$pair"
  echo "== $name"
  build/bin/tokenizer-bench "$npm/tokenizer-$name/models/tokenizer.json" "$text"
  build/bin/tokenizer-bench "$npm/tokenizer-$name/models/tokenizer.json" "$text" --small
  node test/tokenizer/bench.mjs build-npm "$npm/tokenizer-$name/models" "$text" ${encoding:+"$encoding"}
done
