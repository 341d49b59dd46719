#!/usr/bin/env bash
# Fuzzes every harness of test/fuzz for SECONDS each (default 30; docs/reliability.md). Builds the
# libFuzzer binaries alone into build-fuzz/ (clang-19, -DNEEDLE_FUZZ=ON), runs each on a scratch
# copy of its seeds and regressions (the tree's corpus never grows), prints one row per target,
# and exits non-zero when any target found something: crash-*, leak-*, timeout-* and oom-* files
# in build-fuzz/findings/<target>/, logs in build-fuzz/fuzz-logs/<target>.log.
# fuzz-runtime's model is made with the needlec and needle-synth in NEEDLE_FUZZ_TOOLS_DIR, else in
# build/bin when they are built there, else by the fuzz build's own (instrumented) tools.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
build=build-fuzz
tools=${NEEDLE_FUZZ_TOOLS_DIR:-}
if [[ -z $tools && -x build/bin/needlec && -x build/bin/needle-synth ]]; then
  tools=$PWD/build/bin
fi
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 \
  -DCMAKE_CXX_COMPILER=clang++-19 -DNEEDLE_FUZZ=ON -DNEEDLE_FUZZ_TOOLS_DIR="$tools" >/dev/null
cmake --build $build --target needle-fuzzers

# allow_user_poisoning=0 as in scripts/test.sh: Debian's uninstrumented libMLIR shares MLIR's
# allocator with our instrumented code, which would otherwise report a false use-after-poison.
export ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
targets=(safetensors config lora needle ir runtime)
table=$(printf '%-12s %12s %8s %7s %7s  %s' target executions exec/s cov ft findings)
failed=0
for target in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$target findings=$build/findings/$target log=$build/fuzz-logs/$target.log
  rm -rf "$corpus" "$findings"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  find test/fuzz/corpus/$target test/fuzz/regressions/$target -type f ! -name '.*' -exec cp -t "$corpus" {} +
  dictionary=()
  if [[ -f test/fuzz/dict/$target.dict ]]; then
    dictionary=(-dict=test/fuzz/dict/$target.dict)
  fi
  echo "fuzz: $target for ${seconds}s"
  status=0
  "$build/test/fuzz/fuzz-$target" "$corpus" "${dictionary[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1 || status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  read -r cov ft < <(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 | awk '{print $2, $4}') || true
  found=$(find "$findings" -type f | wc -l)
  result=$found
  if ((status != 0 && found == 0)); then
    result="none, but exit status $status (see $log)"
  fi
  if ((status != 0 || found != 0)); then
    failed=1
  fi
  table+=$'\n'$(printf '%-12s %12s %8s %7s %7s  %s' "$target" "${executions:-?}" "${rate:-?}" "${cov:-?}" \
    "${ft:-?}" "$result")
done

echo
echo "$table"
if ((failed)); then
  echo
  echo "fuzz: findings (reproduce with $build/test/fuzz/fuzz-<target> FILE):"
  find "$build/findings" -type f | sort
  exit 1
fi
