#!/usr/bin/env bash
# Installs what needlec needs to build and test, from Debian 12's packages only. Run as root.
# Does nothing (and needs no network) when everything is already installed.
set -euo pipefail

packages=(
  cmake ninja-build g++ git clang-format-19
  libgtest-dev libbenchmark-dev
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools clang-19 lld-19 libclang-rt-19-dev
  libhalide14-0-dev
  libflatbuffers-dev flatbuffers-compiler libfmt-dev
  python3 python3-numpy
  qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-riscv64-linux-gnu
  wasi-libc libc++-19-dev-wasm32 libclang-rt-19-dev-wasm32 nodejs
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
