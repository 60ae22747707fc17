#!/usr/bin/env bash
# run-tiers.sh NAME COMMAND [NAME COMMAND ...]
#
# Run each tier's command in order (all of them, also after a failure), then print a table of
# each tier's wall seconds and result, so every run shows the budget (docs/testing.md). Exits
# non-zero when any tier failed.
set -uo pipefail
names=()
seconds=()
results=()
failed=0
while [ $# -ge 2 ]; do
  name=$1 command=$2
  shift 2
  echo "=== tier: $name"
  start=$(date +%s.%N)
  bash -c "$command"
  status=$?
  end=$(date +%s.%N)
  names+=("$name")
  seconds+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')")
  if [ $status -eq 0 ]; then results+=(ok); else results+=("FAILED ($status)"); failed=1; fi
done
echo
echo "timing (wall seconds, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
total=0
for i in "${!names[@]}"; do
  printf '  %-40s %8s s  %s\n' "${names[$i]}" "${seconds[$i]}" "${results[$i]}"
  total=$(awk -v a="$total" -v b="${seconds[$i]}" 'BEGIN { printf "%.1f", a + b }')
done
printf '  %-40s %8s s\n' total "$total"
exit $failed
