#!/usr/bin/env bash
# Checks that every C++ source is formatted by clang-format-19 with the tree's .clang-format
# (LLVM style, 120 columns). Exits non-zero and lists the files that are not. --fix formats them.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format-19 -i "${files[@]}"
  exit 0
fi
clang-format-19 --dry-run --Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
