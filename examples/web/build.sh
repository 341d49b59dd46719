#!/usr/bin/env bash
# Builds the web example (examples/web/README.md) into OUT_DIR: the model compiled by needlec
# for wasm32 with the tools of examples/tools.json, linked with agent_web.c into agent.wasm, a
# reactor (no main) the page instantiates, beside index.html and web.js.
#
#   examples/web/build.sh MODEL OUT_DIR [NEEDLEC_FLAGS...]     (NEEDLEC: the needlec to run)
set -euo pipefail
if (($# < 2)); then
  echo "usage: build.sh MODEL OUT_DIR [NEEDLEC_FLAGS...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
model=$1 out=$2
shift 2
needlec=${NEEDLEC:-needlec}
mkdir -p "$out"
"$needlec" "$model" --tools "$here/../tools.json" --target wasm32 --name agent "$@" -o "$out/agent"
# wasi-libc gives malloc and the string functions; none of them calls the WASI imports the page
# stubs out (web.js), so the module runs without a WASI host.
clang-19 --target=wasm32-wasi -std=c11 -O2 -Wall -Wextra -Werror -mexec-model=reactor -I "$out" \
  "$here/agent_web.c" "$out/agent.o" -o "$out/agent.wasm" \
  -Wl,--export=web_text,--export=web_text_capacity,--export=web_out,--export=web_out_length \
  -Wl,--export=web_confidence,--export=web_probability,--export=web_call
cp "$here/index.html" "$here/web.js" "$out/"
