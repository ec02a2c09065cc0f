#!/usr/bin/env bash
# What recording a history costs a client, and how fast the checkers are at
# scale: the Go benchmarks of internal/history (the encoder alone, a
# concurrent Write into one file, the reader) and, with SCALE=1, the
# checkers' 1,000,000-operation benchmarks (internal/check/...), each with
# its peak memory (GNU time's maximum resident set).
#
# The cost criterion (issue 24: at most 10 % more client CPU per operation
# than the same run without a history): compare BenchmarkWrite's ns/op with
# the client CPU one operation costs (the run's CPU time divided by its
# operations, e.g. from bench/vs-peers.sh); a Write is well under a
# microsecond, an etcd or SQL client operation tens of microseconds.
# Run on a quiet machine; figures go to docs/PERFORMANCE.md.
# Usage: bash bench/history.sh        (SCALE=1 for the 1M-operation checks)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
go test -run '^$' -bench . -benchmem -count "${COUNT:-3}" ./internal/history
if [ "${SCALE:-0}" = 1 ]; then
  for b in BenchmarkListAppend1M:./internal/check/elle BenchmarkRegister1M:./internal/check/linear; do
    name=${b%%:*} pkg=${b#*:}
    /usr/bin/time -f "$name: max RSS %M KB, %e s wall, %U s user" \
      go test -run '^$' -bench "^$name\$" -benchtime 1x -timeout 30m "$pkg"
  done
fi
