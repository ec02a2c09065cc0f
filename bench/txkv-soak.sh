#!/usr/bin/env bash
# Is txkv's memory flat over a long run, and does a region open stay as
# fast after an hour as after five minutes? (issue 26) A coordinator and
# SERVERS region servers (real processes, the faultbench node commands run
# by the launcher's test binary), RECORDS rows, an update-heavy load at RATE
# transactions/s (90 % rewrite all FIELDCOUNT fields of FIELDLENGTH bytes of
# a random row, 10 % read one) for DURATION. Every SAMPLE the resident set
# of every node process is printed; at the end, per process, the
# least-squares slope in MB per hour of its samples after WARMUP, and the
# region-open load (time to read every region's files as an open does,
# files, bytes) at WARMUP and at the end. The harness is TestSoak in
# internal/launcher/txkv/soak_test.go; it asserts nothing about the
# figures (measure on a quiet machine).
# Usage: bash bench/txkv-soak.sh [DURATION]   (Go duration: 1h, 3m; default 1h)
# Environment: RATE (3000), RECORDS (200), FIELDLENGTH (1000), FIELDCOUNT
# (10), THREADS (8), SERVERS (1), SAMPLE (30s), WARMUP (5m).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-${DURATION:-1h}}
[[ "$dur" =~ ^[0-9]+(s|m|h)$ ]] || { echo "duration $dur: want e.g. 3m or 1h" >&2; exit 2; }
case "$dur" in
  *h) secs=$(( ${dur%h} * 3600 )) ;;
  *m) secs=$(( ${dur%m} * 60 )) ;;
  *s) secs=${dur%s} ;;
esac
timeout_min=$(( secs / 60 + 15 ))
export FAULTBENCH_TXKV_SOAK="$dur" FAULTBENCH_TXKV_SERVERS="${SERVERS:-1}"
export RATE="${RATE:-3000}" RECORDS="${RECORDS:-200}" FIELDLENGTH="${FIELDLENGTH:-1000}" FIELDCOUNT="${FIELDCOUNT:-10}"
export THREADS="${THREADS:-8}" SAMPLE="${SAMPLE:-30s}" WARMUP="${WARMUP:-5m}"
echo "$(nproc) cores; go test -run '^TestSoak\$' ./internal/launcher/txkv/ for $dur (timeout ${timeout_min}m)"
exec go test -count=1 -timeout "${timeout_min}m" -run '^TestSoak$' -v ./internal/launcher/txkv/
