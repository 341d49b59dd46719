#!/usr/bin/env bash
# The proof a restructuring keeps behaviour: what needlec emits for needle3, before and after.
#
#   scripts/emitted-set.sh emit DIR [NEEDLEC]    emit the set into DIR (NEEDLEC: build/bin/needlec)
#   scripts/emitted-set.sh compare BEFORE AFTER  list the files that differ; exit 1 if any does
#   scripts/emitted-set.sh compare BEFORE AFTER RENAMES
#       the same, where a change renames runtime functions: RENAMES lists "old new" per line, and
#       a file that differs passes when it is the old one with the names replaced: an object's
#       code, relocations and data (llvm-objdump's listing, demangled), a source's text up to
#       whitespace
#   scripts/emitted-set.sh run BEFORE AFTER
#       where code differs: runs each x86_64 object and C++ source of both sets on this machine
#       (test/e2e/run_model.c, 20 tokens) and compares the logits, confidence and embedding bit
#       for bit; an object for instructions this CPU lacks is said and left out
#
# The set: needle3 (seed 1, CQ) at depths 2, 8 and 20 for x86_64 (the baseline, x86-64-v3,
# skylake-avx512 and sapphirerapids: each picks other kernels), aarch64 (and +dotprod), armv7,
# riscv64 and wasm32, the fast mode where it has kernels of its own, and the C++ backend's
# source. Build the "before" needlec from the old commit into its own build directory, emit
# with each, then compare. DEPTHS="2" narrows the set for a quick check. The compare leaves out
# the version stamp (the commit built, which differs by construction): the objects' .comment or
# wasm producers section, and the stamp line of the headers and sources.
set -euo pipefail
cd "$(dirname "$0")/.."

emit_set() {
  local dir=$1 needlec=${2:-build/bin/needlec}
  local synth
  synth="$(dirname "$needlec")/needle-synth"
  mkdir -p "$dir"
  [ -f "$dir/needle3.needle" ] || "$synth" --preset needle3 --seed 1 --quantized -o "$dir/needle3.needle"
  local -a variants=(
    "x86_64|x86_64"
    "x86_64-v3|x86_64 --mcpu x86-64-v3"
    "x86_64-avx512|x86_64 --mcpu skylake-avx512"
    "x86_64-spr|x86_64 --mcpu sapphirerapids"
    "x86_64-spr-int8|x86_64 --mcpu sapphirerapids --activations int8"
    "x86_64-v3-int8|x86_64 --mcpu x86-64-v3 --activations int8"
    "aarch64|aarch64"
    "aarch64-dotprod-int8|aarch64 --mattr +dotprod --activations int8"
    "armv7|armv7"
    "riscv64|riscv64"
    "wasm32|wasm32"
    "wasm32-int8|wasm32 --activations int8"
  )
  local depth variant name target
  for depth in ${DEPTHS:-2 8 20}; do
    for variant in "${variants[@]}"; do
      name=${variant%%|*}
      target=${variant#*|}
      # shellcheck disable=SC2086 # the target column is several flags
      "$needlec" "$dir/needle3.needle" --layers "$depth" --target $target -o "$dir/$name-$depth"
    done
    "$needlec" "$dir/needle3.needle" --layers "$depth" --emit cpp -o "$dir/cpp-$depth"
    "$needlec" "$dir/needle3.needle" --layers "$depth" --emit cpp --activations int8 -o "$dir/cpp-int8-$depth"
  done
  (cd "$dir" && sha256sum -- *.o *.h *.cpp >SHA256SUMS)
  echo "emitted-set: $(wc -l <"$dir/SHA256SUMS") files in $dir"
}

# $1 without its version stamp, into $2.
unstamped() {
  case $1 in
  *.o) llvm-objcopy-19 --remove-section=.comment --remove-section=producers "$1" "$2" ;;
  *) sed -E 's/needlec [0-9.]+ \(commit [^)]*\)/needlec VERSION/' "$1" >"$2" ;;
  esac
}

# stdin with the names in RENAMES ($1: "old new" per line) replaced, whole words only.
renamed() {
  local old new
  local -a edits=(-e '')
  while read -r old new; do
    [ -n "$old" ] && edits+=(-e "s/\\b$old\\b/$new/g")
  done <"${1:-/dev/null}"
  sed "${edits[@]}"
}

# An object's code, relocations and section contents, demangled, without its file name and with
# function sections named by their demangled function; the names in RENAMES ($2) replaced. The
# symbol and string tables (and wasm's name and linking sections) are left out: their bytes are
# the names, and the relocations say which symbol each use is.
listing() {
  llvm-objdump-19 -d -r -s "$1" | tail -n +3 | awk '
    /^Contents of section / { skip = $4 ~ /^(\.strtab|\.symtab|\.rela|name|linking|reloc\.)/ }
    /^Disassembly of section / { skip = 0 }
    !skip' | sed -E 's/\.(text|rodata|data|bss)\./.\1 /g' | c++filt | renamed "${2:-}"
}

# Whether $1 and $2 say the same once the names in RENAMES ($3) are replaced in $1: an object's
# code and data, a header's or source's text up to whitespace (renamed code is formatted anew).
same_code() {
  [ -n "${3:-}" ] || return 1
  if [[ $1 == *.o ]]; then
    diff -q <(listing "$1" "$3") <(listing "$2")
  else
    diff -q <(renamed "$3" <"$1" | tr -s '[:space:]' ' ') <(tr -s '[:space:]' ' ' <"$2")
  fi >/dev/null
}

compare_sets() {
  local before=$1 after=$2 renames=${3:-} differ=0 file scratch
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  while read -r _ file; do
    unstamped "$before/$file" "$scratch/before.${file##*.}"
    unstamped "$after/$file" "$scratch/after.${file##*.}"
    if ! cmp -s "$scratch/before.${file##*.}" "$scratch/after.${file##*.}" &&
      ! same_code "$scratch/before.${file##*.}" "$scratch/after.${file##*.}" "$renames"; then
      echo "differs: $file"
      differ=1
    fi
  done <"$before/SHA256SUMS"
  if ! diff -q <(awk '{print $2}' "$before/SHA256SUMS") <(awk '{print $2}' "$after/SHA256SUMS") >/dev/null; then
    echo "the two sets hold different files"
    differ=1
  fi
  ((differ == 0)) && echo "emitted-set: $(wc -l <"$before/SHA256SUMS") files the same${renames:+ (objects up to $renames)}"
  return "$differ"
}

# Builds run_model against $1's object or C++ source ($2: its header) into $3, runs it on 20
# tokens, and writes $3.json, .logits and .emb; false when it does not run here.
run_one() {
  local unit=$1 header=$2 program=$3
  if [[ $unit == *.cpp ]]; then
    g++ -std=c++17 -O2 -march=native -c "$unit" -o "$program.model.o"
    unit=$program.model.o
  fi
  gcc -std=c11 -O2 -DNEEDLE_NAME=needle_model -DNEEDLE_HEADER="\"$header\"" -Itest/e2e -c test/e2e/run_model.c \
    -o "$program.main.o"
  g++ "$program.main.o" "$unit" -lm -o "$program"
  ("$program" all "$(seq -s ' ' 1 20)" "$program") 2>/dev/null
}

run_sets() {
  local before=$1 after=$2 differ=0 unit name scratch
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  for unit in "$before"/x86_64*.o "$before"/cpp*.cpp; do
    name=$(basename "${unit%.*}")
    if ! run_one "$unit" "${unit%.*}.h" "$scratch/before-$name"; then
      echo "not run here: $name (this CPU lacks its instructions)"
      continue
    fi
    run_one "$after/$(basename "$unit")" "$after/$name.h" "$scratch/after-$name"
    for output in json logits emb; do
      cmp -s "$scratch/before-$name.$output" "$scratch/after-$name.$output" || {
        echo "differs: $name.$output"
        differ=1
      }
    done
  done
  ((differ == 0)) && echo "emitted-set: every output that ran here bit-identical"
  return "$differ"
}

case ${1:-} in
emit) emit_set "${@:2}" ;;
run) run_sets "${@:2}" ;;
compare) compare_sets "${@:2}" ;;
*)
  sed -n '2,19p' "$0"
  exit 2
  ;;
esac
