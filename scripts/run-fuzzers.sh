#!/usr/bin/env bash
# run-fuzzers.sh BUILD_DIR [SECONDS]
#
# Run every libFuzzer target under BUILD_DIR for SECONDS each (`make fuzz`), from its seed corpus
# in tests/fuzz/<target>/ when there is one. SECONDS 0 replays instead (`make test`): each
# target runs every file of tests/fuzz/<target>/ (seeds and past crash inputs) once, under its
# ASan + UBSan, and mutates nothing. On a crash, leak, timeout or sanitizer report, print the
# fuzzer's log, keep the input under BUILD_DIR/fuzz-artifacts/ and exit non-zero.
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
  log=$(mktemp)
  seeds="tests/fuzz/$name"
  corpus=$(mktemp -d)  # fuzzing writes new inputs here, never into tests/fuzz
  if [ "$seconds" != 0 ] && [ -d "$seeds" ]; then cp -r "$seeds"/. "$corpus"/; fi
  # -timeout: one input taking longer is a hang and fails like a crash.
  flags=(-timeout=25 -rss_limit_mb=2048 -artifact_prefix="$artifacts/$name-")
  if [ "$seconds" = 0 ]; then
    inputs=("$seeds"/*)
    if [ ! -e "${inputs[0]}" ]; then
      echo "fuzz: $name has no inputs in $seeds to replay"
      failed+=("$name")
    elif "$fuzzer" "${flags[@]}" "${inputs[@]}" >"$log" 2>&1; then
      echo "fuzz: $name replayed ${#inputs[@]} inputs of $seeds, no crash"
    else
      echo "fuzz: $name FAILED; its log:"
      tail -60 "$log"
      failed+=("$name")
    fi
  elif "$fuzzer" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 "$corpus" \
      >"$log" 2>&1; then
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
if [ "$seconds" = 0 ]; then
  echo "fuzz: all $found targets replayed their inputs without a crash"
else
  echo "fuzz: all $found targets ran ${seconds}s each without a crash"
fi
