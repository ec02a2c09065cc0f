#!/usr/bin/env bash
# Sweeps for Figure 2 of the transactional key-value store's recovery
# middleware paper (docs/papers.md) on txkv, one scenario run per point:
#
#   scripts/txkv-figure2.sh persistence   # Figure 2(a): async and sync persistence over target rates
#   scripts/txkv-figure2.sh heartbeat     # Figure 2(b): closed loop over heartbeat intervals
#
# Environment: FAULTBENCH (default bin/faultbench), RUNS (default runs),
# RATES (default "100 200 300 400 500 max"), MODES (default "async sync"),
# INTERVALS (default "50ms 100ms 250ms 500ms 1s 2s 5s 10s"), ROUNDS (default
# 1: how often the whole sweep repeats; points are interleaved so that a
# burst of load from other programs on the machine does not hit one point
# only), EXTRA (more --set arguments for every run, e.g.
# "--set load.duration=60s").
#
# The scenario schema has no sweep, and launcher option keys contain dots
# (txkv.persistence), which `--set` paths cannot address; so every point
# runs a copy of the scenario with the option's value substituted. Each
# run's directory holds the full results; this script prints one CSV line
# per point (and writes them to RUNS/txkv-WHAT-TIME.csv):
# mode/interval, target, throughput, mean, p50, p95, p99 latency (ms),
# conflicts, lost-writes verdict; with ROUNDS > 1 it ends with the median of
# every column per point.
set -euo pipefail
cd "$(dirname "$0")/.."
FB=${FAULTBENCH:-bin/faultbench}
RUNS=${RUNS:-runs}
what=${1:-}
case "$what" in
persistence) scenario=scenarios/txkv-persistence.yaml ;;
heartbeat) scenario=scenarios/txkv-heartbeat.yaml ;;
*)
	echo "usage: $0 persistence|heartbeat" >&2
	exit 2
	;;
esac
command -v jq >/dev/null 2>&1 || {
	echo "$0: needs jq to read summary.json (apt-get install jq)" >&2
	exit 1
}
[ -x "$FB" ] || {
	echo "$0: $FB not found: run make build first, or set FAULTBENCH" >&2
	exit 1
}
mkdir -p "$RUNS"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv="$RUNS/txkv-$what-$stamp.csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "point,target,throughput_tps,mean_ms,p50_ms,p95_ms,p99_ms,conflicts,lost_writes,run_dir" | tee "$csv"

run_point() { # label yaml rate
	local label=$1 yaml=$2 rate=$3 log dir
	log="$tmp/run.log"
	# shellcheck disable=SC2086
	if ! "$FB" scenario "$yaml" --runs "$RUNS" --set "load.rate=$rate" ${EXTRA:-} >"$log" 2>&1; then
		echo "run $label $rate failed:" >&2
		tail -20 "$log" >&2
		return 0
	fi
	dir=$(sed -n 's/^run directory: //p' "$log" | tail -1)
	jq -r --arg l "$label" --arg r "$rate" --arg d "$dir" \
		'[$l, $r, (.totals.all.throughput_ops|floor),
		  ((.totals.all.latency_us.mean/1000*100|round)/100), (.totals.all.latency_us.p50/1000),
		  (.totals.all.latency_us.p95/1000), (.totals.all.latency_us.p99/1000),
		  .totals.all.errors.conflict, (if .checks_passed["lost-writes"] then "PASS" else "FAIL" end), $d] | @csv' \
		"$dir/summary.json" | tr -d '"' | tee -a "$csv"
}

for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
	if [ "$what" = persistence ]; then
		for rate in ${RATES:-100 200 300 400 500 max}; do
			for mode in ${MODES:-async sync}; do
				sed "s/txkv.persistence: async/txkv.persistence: $mode/" "$scenario" >"$tmp/s.yaml"
				run_point "$mode" "$tmp/s.yaml" "$rate"
			done
		done
	else
		for hb in ${INTERVALS:-50ms 100ms 250ms 500ms 1s 2s 5s 10s}; do
			sed "s/txkv.heartbeat: 1s/txkv.heartbeat: $hb/" "$scenario" >"$tmp/s.yaml"
			run_point "$hb" "$tmp/s.yaml" max
		done
	fi
done
if [ "${ROUNDS:-1}" -gt 1 ]; then
	echo "medians over ${ROUNDS} rounds:"
	echo "point,target,runs,throughput_tps,mean_ms,p50_ms,p95_ms,p99_ms,conflicts"
	tail -n +2 "$csv" | awk -F, '
		{ k = $1 "," $2; if (!(k in n)) order[++m] = k; n[k]++; for (c = 3; c <= 8; c++) v[k, c, n[k]] = $c }
		function med(k, c,   i, j, t, a, cnt) {
			cnt = n[k]; for (i = 1; i <= cnt; i++) a[i] = v[k, c, i] + 0
			for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return (cnt % 2) ? a[(cnt + 1) / 2] : (a[cnt / 2] + a[cnt / 2 + 1]) / 2
		}
		END { for (i = 1; i <= m; i++) { k = order[i]; line = k "," n[k]; for (c = 3; c <= 8; c++) line = line "," med(k, c); print line } }'
fi
echo "results: $csv" >&2
