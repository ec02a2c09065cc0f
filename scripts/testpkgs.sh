#!/usr/bin/env bash
# testpkgs.sh — the packages of `make test`, in two groups:
#
#   scripts/testpkgs.sh serial   packages whose tests start databases, processes or
#                                in-process clusters (they run one at a time, -p 1, so
#                                that they do not starve each other on two cores)
#   scripts/testpkgs.sh unit     every other package (pure unit tests: they run in
#                                parallel)
#   scripts/testpkgs.sh lane-a   the serial packages split in two lanes that run side
#   scripts/testpkgs.sh lane-b   by side, each one package at a time: lane a holds
#                                every package whose tests create network namespaces or
#                                SSH hosts (NET below: they pick a free 198.18.x.0/24 by
#                                check-then-create, atomic only within one state
#                                directory, so two of them must not run at once), plus
#                                LANE_A to balance the lanes by the packages' test
#                                times; lane b the other serial packages
#
# A package is serial when one of its test files calls testing.Short() (the
# project's convention: -short skips the tests that start a database) or
# wltest.StartPostgres (which does that for the workload packages' tests)
# and it is not listed in UNIT below (-short shortens its tests, which start
# nothing and time nothing: pure CPU, better run beside the others), or when
# it is listed in SERIAL (tests whose in-process clusters run on heartbeats
# and session timeouts). Prints import paths, one a line.
set -euo pipefail
cd "$(dirname "$0")/.."

SERIAL=(
	github.com/faultbench/faultbench/internal/txkv
)
UNIT=(
	github.com/faultbench/faultbench/internal/check/elle # large generated histories
	# analyses of the committed result inputs and report rendering under
	# -race (TestResultsPagesInputs, TestResultsTrialsPages: pure CPU, the
	# longest package of lane b in a loaded run here); its testing.Short()
	# is TestRenderLong's, which -race skips (make test runs it alone)
	github.com/faultbench/faultbench/internal/report
)
# serial packages whose tests create network namespaces or SSH hosts
NET=(
	github.com/faultbench/faultbench/cmd/faultbench
	github.com/faultbench/faultbench/internal/clusterctl
	github.com/faultbench/faultbench/internal/distrib
	github.com/faultbench/faultbench/internal/fault
	github.com/faultbench/faultbench/internal/netns
	github.com/faultbench/faultbench/internal/remote
)
# other serial packages in lane a: with NET about half of the serial
# packages' test time (CI 2026-11-27, one at a time: NET 421 s + these
# 238 s with sweep; lane b about 655 s of 1284 s plus the workload packages
# added since). Since then lane a got internal/experiment's EB2 autoscaling
# run on etcd (TestAutoscaleRun, about 35 s), the power-loss cases of
# clusterctl and internal/driver/hbase's TestHBaseCluster (a 3-node HBase
# on HDFS, ten JVMs: 352 s on this machine at load 40, four minutes of it
# starting the cluster; less on a quiet one, not measured); lane b lost
# internal/report (to UNIT) and one Cassandra start (driver/cassandra's
# compare-and-set shares its cluster) and got the three workload packages
# that start PostgreSQL (wltest.StartPostgres); sweep (two short scenarios)
# moved to lane b: an estimate from the tests' phases, not a measurement.
# Then cmd/faultbench (NET) got Redis Cluster on six SSH hosts and a
# bring-your-own cluster on three (TestRedisClusterOnHosts,
# TestExistingClusterOnHosts: 376 s and 153 s at load 60 here) and the
# dry run of every shipped scenario, so internal/driver/hbase (no
# namespaces, no SSH) went back to lane b to keep the lanes even
LANE_A=(
	github.com/faultbench/faultbench/internal/experiment
	github.com/faultbench/faultbench/internal/measure
)

group=${1:-}
case "$group" in
serial | unit | lane-a | lane-b) ;;
*)
	echo "usage: scripts/testpkgs.sh serial|unit|lane-a|lane-b" >&2
	exit 2
	;;
esac

go list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./... |
	while read -r pkg dir files; do
		serial=0
		for s in "${SERIAL[@]}"; do
			[ "$pkg" = "$s" ] && serial=1
		done
		for f in $files; do
			if grep -qE 'testing\.Short\(\)|wltest\.StartPostgres' "$dir/$f"; then
				serial=1
				break
			fi
		done
		for u in "${UNIT[@]}"; do
			[ "$pkg" = "$u" ] && serial=0
		done
		lane=b
		for a in "${NET[@]}" "${LANE_A[@]}"; do
			[ "$pkg" = "$a" ] && lane=a
		done
		case "$group" in
		serial) [ $serial -eq 1 ] && echo "$pkg" ;;
		unit) [ $serial -eq 0 ] && echo "$pkg" ;;
		lane-a) [ $serial -eq 1 ] && [ $lane = a ] && echo "$pkg" ;;
		lane-b) [ $serial -eq 1 ] && [ $lane = b ] && echo "$pkg" ;;
		esac
	done
