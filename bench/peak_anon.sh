#!/bin/bash
# Run a command and print its peak anonymous memory (the process's own, not the page cache's
# file pages it maps), sampled from /proc/PID/status every 5 ms.
"$@" > /dev/null &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  anon=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  if [ -n "$anon" ] && [ "$anon" -gt "$peak" ]; then peak=$anon; fi
  sleep 0.005
done
wait "$pid"
status=$?
echo "peak anonymous memory: ${peak} kB ($*)"
exit $status
