#!/usr/bin/env bash
# What recording the operation history costs the client (issue 24: at most
# 10 % more client CPU per operation than the same run without a history):
# the same `faultbench run` (workload A, closed loop, the same threads and
# duration) with the history off and on (--history: every read and write
# recorded in RUN_DIR/history.jsonl), in alternating rounds against the same
# server, so that other load on the machine hits both sides. Per round and
# as medians: operations, throughput, client CPU seconds per million
# operations (utime+stime of the faultbench process from /proc/PID/stat when
# it exits, by bench/clientcpu), and the ratio on/off of the CPU per operation.
# Environment: FAULTBENCH_BIN (bin/faultbench), DURATION (s per run, 20),
# THREADS (16), RECORDS (10000), ROUNDS (3), TARGETS ("etcd redis"), CLIENTCPU
# (a built bench/clientcpu; built here when unset). bench/vs-peers.sh runs it.
# Run on a quiet machine; the figure goes to docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FAULTBENCH_BIN:-bin/faultbench}
DURATION=${DURATION:-20}
THREADS=${THREADS:-16}
RECORDS=${RECORDS:-10000}
ROUNDS=${ROUNDS:-3}
TARGETS=${TARGETS:-etcd redis}
command -v "$BIN" >/dev/null || { echo "missing $BIN (run make build)" >&2; exit 1; }

work=$(mktemp -d /tmp/faultbench-histcost.XXXXXX)
up=()
cleanup() {
  for t in "${up[@]}"; do "$BIN" cluster down "$t" --state-dir "$work/state" --name "hc$t" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
CLIENTCPU=${CLIENTCPU:-}
if [ -z "$CLIENTCPU" ]; then
  go build -o "$work/clientcpu" ./bench/clientcpu
  CLIENTCPU=$work/clientcpu
fi
# cpu COMMAND...: run it, print "user+sys 0" seconds of the client process (from /proc)
cpu() {
  "$CLIENTCPU" -o "$work/cpu" -- "$@" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  tail -1 "$work/cpu" | awk '{print $2, 0}'
}
field() { grep -m1 "\"$2\"" "$1/summary.json" | tr -dc '0-9.'; }
: >"$work/results"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
: >"$work/state"
echo "history cost: $(nproc) cores, $THREADS threads, ${DURATION}s per run, $ROUNDS alternating rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(loadavg)"
for t in $TARGETS; do
  case $t in
    etcd) key=etcd.endpoints; col=5 ;;
    redis) key=redis.addr; col=5 ;;
    *) echo "unknown target $t (etcd, redis)" >&2; exit 1 ;;
  esac
  "$BIN" cluster up "$t" --nodes 1 --dir "$work/$t" --state-dir "$work/state" --name "hc$t" >/dev/null
  up+=("$t")
  ep=$("$BIN" cluster status "$t" --state-dir "$work/state" --name "hc$t" | awk -v c="$col" '$1 == "n1" {print $c}')
  "$BIN" load "$t" -P workloads/workloada -p recordcount="$RECORDS" -p "$key=$ep" -threads 16 -q --runs "$work/runs" --name "load$t"
  # the machine state and the command of the target's RESULT line ($WORK: the temporary directory)
  cmd=("$BIN" run "$t" -P workloads/workloada -p recordcount="$RECORDS" -p "$key=$ep" -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS")
  line=$(printf '%q ' "${cmd[@]}"); line=${line% }
  printf '%s|load average %s, %s, commit %s|%s [--history]\n' "$t" "$(loadavg)" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$commit" "${line//$work/\$WORK}" >>"$work/state"
  for r in $(seq 1 "$ROUNDS"); do
    for mode in off on; do
      flag=(); [ "$mode" = on ] && flag=(--history)
      c=$(cpu "${cmd[@]}" -q --runs "$work/runs" --name "$t$mode$r" "${flag[@]}")
      s=$(ls -d "$work"/runs/*-"$t$mode$r" | tail -1)
      ops=$(field "$s" operations)
      echo "$t $mode $r $ops $(field "$s" throughput_ops) $c" >>"$work/results"
    done
  done
done
echo "load average at the end: $(loadavg)"
awk '
FILENAME == ARGV[1] { split($0, sp, "|"); mstate[sp[1]] = sp[2]; mcmd[sp[1]] = sp[3]; next }
function median(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ k = $1 SUBSEP $2; n[k]++; c = ($6 + $7) / $4 * 1e6; cpu[k, n[k]] = c; seen[$1] = 1
  printf "%-6s history %-3s round %d: %9d ops, %8.0f ops/s, %8.2f CPU s per 1M ops\n", $1, $2, $3, $4, $5, c }
END {
  for (t in seen) {
    off = t SUBSEP "off"; on = t SUBSEP "on"
    for (i = 1; i <= n[off]; i++) a[i] = cpu[off, i]; mo = median(a, n[off])
    for (i = 1; i <= n[on]; i++) b[i] = cpu[on, i]; mn = median(b, n[on])
    printf "%-6s median CPU s per 1M ops: off %.2f, on %.2f; ratio on/off %.3f (requirement <= 1.10)\n", t, mo, mn, mn / mo
    printf "RESULT history-%s: client CPU per operation ratio history on/off %.3f: %s the bar (<= 1.10); %s; command: %s\n", t, mn / mo, mn / mo <= 1.10 ? "meets" : "misses", mstate[t], mcmd[t]
  }
}' "$work/state" "$work/results"
