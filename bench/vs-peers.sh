#!/usr/bin/env bash
# faultbench beside its peers, in one invocation, against the same server:
#   redis: faultbench (workload A, closed loop) vs redis-benchmark (HGETALL/HSET, same concurrency).
# Prints throughput, the ratio, and client CPU seconds per million operations.
# Environment: FAULTBENCH_BIN (default bin/faultbench), DURATION (s, 30), THREADS (16), RECORDS (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FAULTBENCH_BIN:-bin/faultbench}
DURATION=${DURATION:-30}
THREADS=${THREADS:-16}
RECORDS=${RECORDS:-100000}
for t in "$BIN" redis-server redis-benchmark; do
  command -v "$t" >/dev/null || { echo "missing $t (run make build and scripts/setup.sh)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/faultbench-bench.XXXXXX)
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# a free loopback port
port=
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free port" >&2; exit 1; }
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$work" --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done

cpu() { # cpu SECONDS-FILE COMMAND...: run, append user+sys seconds of the command to the file
  local f=$1; shift
  local TIMEFORMAT='%U %S'
  { time "$@" >/dev/null 2>"$work/err" ; } 2>>"$f" || { cat "$work/err" >&2; return 1; }
}
sumcpu() { awk '{s += $1 + $2} END {printf "%.2f", s}' "$1"; }

echo "faultbench vs redis-benchmark: redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$port, $THREADS clients, $RECORDS records, ${DURATION}s, $(nproc) cores"

# faultbench: load, then workload A closed loop
"$BIN" load redis -P workloads/workloada -p recordcount="$RECORDS" -p redis.addr="127.0.0.1:$port" -threads 16 -q --runs "$work/runs" --name load
cpu "$work/fb.cpu" "$BIN" run redis -P workloads/workloada -p recordcount="$RECORDS" -p redis.addr="127.0.0.1:$port" \
  -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS" -q --runs "$work/runs" --name run
sum=$(ls "$work"/runs/*-run/summary.json)
fb_tp=$(grep -m1 '"throughput_ops"' "$sum" | tr -dc '0-9.')
fb_ops=$(grep -m1 '"operations"' "$sum" | tr -dc '0-9')
fb_cpu=$(sumcpu "$work/fb.cpu")

# redis-benchmark: the same record shape (10 fields of 100 bytes), then HGETALL and HSET of one field, 50/50
v=$(head -c 100 /dev/zero | tr '\0' 'x')
fields=(); for i in $(seq 0 9); do fields+=("field$i" "$v"); done
redis-benchmark -p "$port" -c 16 -n "$RECORDS" -r "$RECORDS" -q HSET "bench:__rand_int__" "${fields[@]}" >/dev/null
half=$((fb_ops / 2)); [ "$half" -gt 1000 ] || half=1000
rb() { redis-benchmark -p "$port" -c "$THREADS" -n "$half" -r "$RECORDS" --csv "$@" | tail -1 | cut -d, -f2 | tr -dc '0-9.'; }
: >"$work/rb.cpu"
TIMEFORMAT='%U %S'
{ time rb HGETALL "bench:__rand_int__" >"$work/get" ; } 2>>"$work/rb.cpu"
{ time rb HSET "bench:__rand_int__" field0 "$v" >"$work/set" ; } 2>>"$work/rb.cpu"
get=$(cat "$work/get"); set=$(cat "$work/set")
rb_tp=$(awk -v a="$get" -v b="$set" 'BEGIN {printf "%.1f", 2 / (1/a + 1/b)}')
rb_cpu=$(sumcpu "$work/rb.cpu")

awk -v fb="$fb_tp" -v rb="$rb_tp" -v fbo="$fb_ops" -v fbc="$fb_cpu" -v rbo="$((half * 2))" -v rbc="$rb_cpu" -v g="$get" -v s="$set" 'BEGIN {
  printf "%-34s %12s %14s %22s\n", "client", "ops/s", "operations", "CPU s per 1M ops"
  printf "%-34s %12.0f %14d %22.2f\n", "faultbench (workload A)", fb, fbo, fbc / fbo * 1e6
  printf "%-34s %12.0f %14d %22.2f\n", "redis-benchmark (HGETALL+HSET)", rb, rbo, rbc / rbo * 1e6
  printf "  redis-benchmark HGETALL %.0f ops/s, HSET %.0f ops/s (mix = harmonic mean)\n", g, s
  printf "ratio faultbench / redis-benchmark: %.2f\n", fb / rb
}'
