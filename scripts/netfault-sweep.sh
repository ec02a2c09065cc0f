#!/usr/bin/env bash
# Loss and delay sweeps on etcd with every member in its own network
# namespace (needs root): one 3-member cluster (`cluster up etcd --net`), one
# load phase, then per step a network fault on every member, a closed-loop
# `faultbench run` of workload A, and a heal. Prints one CSV line per step:
#
#   fault,value,throughput_ops,update_p99_ms,read_p99_ms,errors
#
# Environment: FAULTBENCH (default bin/faultbench), RUNS (default runs),
# LOSSES (default "0 1% 5% 20%"), DELAYS (default "0 10ms 50ms 200ms"),
# SECONDS_PER_STEP (default 20), THREADS (default 16),
# FAULTBENCH_STATE_DIR (where the cluster is recorded).
#
#   sudo scripts/netfault-sweep.sh | tee netfault-sweep.csv
set -euo pipefail
cd "$(dirname "$0")/.."
FB=${FAULTBENCH:-bin/faultbench}
RUNS=${RUNS:-runs}
LOSSES=${LOSSES:-"0 1% 5% 20%"}
DELAYS=${DELAYS:-"0 10ms 50ms 200ms"}
SECS=${SECONDS_PER_STEP:-20}
THREADS=${THREADS:-16}
NAME=netsweep-$$
command -v jq >/dev/null || { echo "netfault-sweep.sh: needs jq" >&2; exit 1; }
[ -x "$FB" ] || { echo "netfault-sweep.sh: no faultbench binary at $FB (make build)" >&2; exit 1; }

"$FB" cluster up etcd --nodes 3 --net --name "$NAME" >&2
trap '"$FB" cluster down "$NAME" >&2' EXIT
state=${FAULTBENCH_STATE_DIR:-$HOME/.local/state/faultbench}/$NAME.json
eps=$(jq -r '[.nodes[].addr] | join(",")' "$state")
props=(-P workloads/workloada -p recordcount=10000 -p etcd.endpoints="$eps")
"$FB" load etcd "${props[@]}" -threads 16 -q --runs "$RUNS" >&2

step() { # fault value
	local fault=$1 value=$2 out
	if [ "$value" != 0 ]; then
		"$FB" fault "$fault" all "$value" --cluster "$NAME" >&2
	fi
	out=$("$FB" run etcd "${props[@]}" -p operationcount=0 -p maxexecutiontime="$SECS" \
		-threads "$THREADS" --runs "$RUNS" --name "netsweep-$fault" 2>&1)
	if [ "$value" != 0 ]; then
		"$FB" fault heal --cluster "$NAME" >&2
	fi
	local tput up99 rd99 errs
	tput=$(awk -F', ' '/^\[OVERALL\], Throughput/ {print $3}' <<<"$out")
	up99=$(awk -F', ' '/^\[UPDATE\], 99thPercentileLatency/ {printf "%.1f", $3/1000}' <<<"$out")
	rd99=$(awk -F', ' '/^\[READ\], 99thPercentileLatency/ {printf "%.1f", $3/1000}' <<<"$out")
	errs=$(awk -F', ' '$2 == "Return=ERROR" {n += $3} END {print n + 0}' <<<"$out")
	echo "$fault,$value,$tput,$up99,$rd99,$errs"
}

echo "fault,value,throughput_ops,update_p99_ms,read_p99_ms,errors"
for v in $LOSSES; do step loss "$v"; done
for v in $DELAYS; do step delay "$v"; done
