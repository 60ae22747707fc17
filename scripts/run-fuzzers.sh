#!/usr/bin/env bash
# Run every libFuzzer target under BUILD_DIR for SECONDS each, from its seed corpus in
# tests/fuzz/<target>/ when there is one. On a crash, leak, timeout or sanitizer report, print
# the fuzzer's log, keep the input under BUILD_DIR/fuzz-artifacts/ and exit non-zero.
set -euo pipefail
build_dir=${1:?build dir}
seconds=${2:-30}
artifacts="$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"
found=0
failed=()
for fuzzer in $(find "$build_dir" -maxdepth 5 -type f -name '*_fuzz' -perm -u+x | sort); do
  found=$((found + 1))
  name=$(basename "$fuzzer")
  corpus=$(mktemp -d)
  log=$(mktemp)
  seeds="tests/fuzz/$name"
  [ -d "$seeds" ] && cp -r "$seeds"/. "$corpus"/
  # -timeout: one input taking longer is a hang and fails like a crash.
  if "$fuzzer" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$name-" "$corpus" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz: $name ${seconds}s: ${runs:-?} runs, ${cov:-cov: ?}, no crash"
  else
    echo "fuzz: $name FAILED; its log:"
    tail -60 "$log"
    failed+=("$name")
  fi
  rm -rf "$corpus" "$log"
done
[ $found -gt 0 ] || { echo "fuzz: no fuzz targets found under $build_dir"; exit 1; }
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of $found targets failed: ${failed[*]}; inputs in $artifacts/"
  exit 1
fi
echo "fuzz: all $found targets ran ${seconds}s each without a crash"
