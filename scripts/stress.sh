#!/usr/bin/env bash
# stress.sh [REPEATS]: `make stress`, the race hunt (not part of `make test`).
#
# Every ctest suite whose test file writes temporary files (a temp dir, a prepared dataset,
# generated media) runs REPEATS times (30 by default) under `ctest -j$(nproc) --repeat
# until-fail`, beside each other as CI runs them; then the whole pytest tier runs twice in a
# row. The suites are found in the sources, so a new test that writes files is covered without
# a list to keep. Exits non-zero at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-30}
build_dir=${BUILD_DIR:-build/release}
writes='FreshDir|TempPath|ProcessTempDir|BuildCocoDataset|GeneratedMedia|ScratchDir|WriteFileAtomic|ofstream'
mapfile -t files < <(grep -rlE "$writes" src --include='*_test.cc')
mapfile -t suites < <(grep -hoE '^(TEST|TEST_F|TEST_P)\([A-Za-z0-9_]+' "${files[@]}" |
  sed 's/.*(//' | sort -u)
regex="(^|/)($(IFS='|'; echo "${suites[*]}"))\$"
echo "stress: ${#suites[@]} suites of ${#files[@]} test files that write files, ${repeats} times each"
ctest --test-dir "$build_dir" -j"$(nproc)" --timeout 600 --output-on-failure \
  --repeat until-fail:"$repeats" -R "$regex"
for round in 1 2; do
  echo "stress: pytest tier, round $round of 2"
  make --no-print-directory test-pytest
done
echo "stress: passed"
