#!/usr/bin/env bash
# What the disk faults' file-system layer costs when it is present but idle
# (issue 27, "the cost of the FUSE layer when present but idle"): the same
# one-node cluster, started with and without `--disk-faults` (its data
# directory on the FUSE layer, no fault set), the same closed-loop
# `faultbench run` (workload A by default: 50 % reads, 50 % updates, so
# that the node writes and, with the settings below, fsyncs), in
# alternating rounds (plain, fuse, then fuse, plain, ...) so that other load
# on the machine hits both sides. Per round: throughput and p99 latency
# (summary.json totals.throughput_ops, totals.all.latency_us.p99); at the end the medians per target and mode, and
# the ratios fuse/plain of throughput and of p99, side by side.
# Targets and the settings that make them write to disk:
#   redis: AOF on, appendfsync everysec (-o redis.appendonly=yes)
#   etcd:  its WAL, fsynced per commit (the default)
#   postgres-ha, galera, cassandra, txkv: their defaults
# Environment: FAULTBENCH_BIN (bin/faultbench), TARGETS ("redis etcd"),
# DURATION (s per run, 30), THREADS (16), RECORDS (10000), ROUNDS (3),
# WORKLOAD (workloads/workloada). Needs root and /dev/fuse.
# Run on a quiet machine; the figures go to docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FAULTBENCH_BIN:-bin/faultbench}
TARGETS=${TARGETS:-redis etcd}
DURATION=${DURATION:-30}
THREADS=${THREADS:-16}
RECORDS=${RECORDS:-10000}
ROUNDS=${ROUNDS:-3}
WORKLOAD=${WORKLOAD:-workloads/workloada}
command -v "$BIN" >/dev/null || { echo "missing $BIN (run make build)" >&2; exit 1; }
command -v jq >/dev/null || { echo "missing jq (apt-get install jq)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "the disk layer needs root" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "the disk layer needs /dev/fuse" >&2; exit 1; }

work=$(mktemp -d /tmp/faultbench-fuseidle.XXXXXX)
chmod 755 "$work" # nodes that run as mysql or postgres walk into it
current=""
cleanup() {
  [ -n "$current" ] && "$BIN" cluster down "$current" --state-dir "$work/state" >/dev/null 2>&1 || true
  "$BIN" cleanup --all --state-dir "$work/state" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
: >"$work/results"

# launcher options that make the node write to its disk
opts() {
  case $1 in
    redis) echo "-o redis.appendonly=yes -o redis.appendfsync=everysec" ;;
    *) echo "" ;;
  esac
}

echo "FUSE layer idle cost: $(nproc) cores, $THREADS threads, ${DURATION}s per run, $ROUNDS rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(loadavg)"
for t in $TARGETS; do
  for r in $(seq 1 "$ROUNDS"); do
    order="plain fuse"
    [ $((r % 2)) = 0 ] && order="fuse plain"
    for mode in $order; do
      name="fi$r$mode"
      flag=()
      [ "$mode" = fuse ] && flag=(--disk-faults)
      # shellcheck disable=SC2046
      "$BIN" cluster up "$t" --nodes 1 --dir "$work/c/$t$r$mode" --state-dir "$work/state" $(opts "$t") "${flag[@]}" >"$work/up.out" 2>&1 ||
        { cat "$work/up.out" >&2; exit 1; }
      current=$t # named after its kind, which load and run look for
      # load and run find the cluster in the state directory (the only one there)
      "$BIN" load "$t" -P "$WORKLOAD" -p recordcount="$RECORDS" --state-dir "$work/state" -threads 16 -q --runs "$work/runs" --name "load$t$name" >/dev/null
      "$BIN" run "$t" -P "$WORKLOAD" -p recordcount="$RECORDS" -p operationcount=0 -p maxexecutiontime="$DURATION" \
        --state-dir "$work/state" -threads "$THREADS" -q --runs "$work/runs" --name "$t$name" >/dev/null
      s=$(ls -d "$work"/runs/*-"$t$name" | tail -1)
      tput=$(jq -r '.totals.throughput_ops' "$s/summary.json")
      p99=$(jq -r '.totals.all.latency_us.p99' "$s/summary.json")
      printf '%-12s %-5s round %d: %10.0f ops/s, p99 %8d us\n' "$t" "$mode" "$r" "$tput" "$p99"
      echo "$t $mode $r $tput $p99" >>"$work/results"
      "$BIN" cluster down "$t" --state-dir "$work/state" >/dev/null
      current=""
    done
  done
done
echo "load average at the end: $(loadavg)"
awk '
function median(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ k = $1 SUBSEP $2; n[k]++; tp[k, n[k]] = $4; lat[k, n[k]] = $5; seen[$1] = 1 }
END {
  printf "\n| target | throughput plain (ops/s) | throughput fuse (ops/s) | ratio | p99 plain (us) | p99 fuse (us) | ratio |\n"
  printf "| --- | --- | --- | --- | --- | --- | --- |\n"
  for (t in seen) {
    p = t SUBSEP "plain"; f = t SUBSEP "fuse"
    for (i = 1; i <= n[p]; i++) a[i] = tp[p, i]; tpp = median(a, n[p])
    for (i = 1; i <= n[f]; i++) a[i] = tp[f, i]; tpf = median(a, n[f])
    for (i = 1; i <= n[p]; i++) a[i] = lat[p, i]; lp = median(a, n[p])
    for (i = 1; i <= n[f]; i++) a[i] = lat[f, i]; lf = median(a, n[f])
    printf "| %s | %.0f | %.0f | %.3f | %d | %d | %.3f |\n", t, tpp, tpf, tpf / tpp, lp, lf, lf / lp
  }
}' "$work/results"
