#!/usr/bin/env bash
# Run every libFuzzer target under BUILD_DIR for SECONDS each, from its seed corpus in
# tests/fuzz/<target>/ when there is one. Exit non-zero on the first crash.
set -euo pipefail
build_dir=${1:?build dir}
seconds=${2:-30}
found=0
for fuzzer in $(find "$build_dir" -maxdepth 4 -type f -name '*_fuzz' -perm -u+x | sort); do
  found=1
  name=$(basename "$fuzzer")
  corpus=$(mktemp -d)
  seeds="tests/fuzz/$name"
  [ -d "$seeds" ] && cp -r "$seeds"/. "$corpus"/
  echo "fuzz: $name for ${seconds}s"
  "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=0 "$corpus" 2>&1 | tail -3
  rm -rf "$corpus"
done
[ $found -eq 1 ] || { echo "fuzz: no fuzz targets found under $build_dir"; exit 1; }
