#!/usr/bin/env bash
# testpkgs.sh — the packages of `make test`, in two groups:
#
#   scripts/testpkgs.sh serial   packages whose tests start databases, processes or
#                                in-process clusters (they run one at a time, -p 1, so
#                                that they do not starve each other on two cores)
#   scripts/testpkgs.sh unit     every other package (pure unit tests: they run in
#                                parallel)
#
# A package is serial when one of its test files calls testing.Short() (the
# project's convention: -short skips the tests that start a database) and it
# is not listed in UNIT below (-short shortens its tests, which start
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
)

group=${1:-}
case "$group" in
serial | unit) ;;
*)
	echo "usage: scripts/testpkgs.sh serial|unit" >&2
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
			if grep -q 'testing\.Short()' "$dir/$f"; then
				serial=1
				break
			fi
		done
		for u in "${UNIT[@]}"; do
			[ "$pkg" = "$u" ] && serial=0
		done
		if { [ "$group" = serial ] && [ $serial -eq 1 ]; } || { [ "$group" = unit ] && [ $serial -eq 0 ]; }; then
			echo "$pkg"
		fi
	done
