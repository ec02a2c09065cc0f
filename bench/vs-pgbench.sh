#!/usr/bin/env bash
# faultbench's PostgreSQL driver beside pgbench, against the same server, same concurrency:
#   reads:   faultbench workload C (read one record by key)   vs  pgbench -S (select-only)
#   updates: faultbench updates only (one field of one record) vs  pgbench with a one-UPDATE script
# (pgbench's built-in simple-update, -N, runs three statements per transaction; the one-statement
# script is the same work as one faultbench update.) Prints throughput and the ratios.
# Runs one plain PostgreSQL 15 (no replication) as the postgres user: needs root.
# Environment: FAULTBENCH_BIN (default bin/faultbench), DURATION (s, 30), THREADS (16), RECORDS (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FAULTBENCH_BIN:-bin/faultbench}
DURATION=${DURATION:-30}
THREADS=${THREADS:-16}
RECORDS=${RECORDS:-100000}
PGBIN=/usr/lib/postgresql/15/bin
for t in "$BIN" "$PGBIN/postgres" "$PGBIN/pgbench" setpriv; do
  command -v "$t" >/dev/null || { echo "missing $t (run make build and scripts/setup.sh --only postgres)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "run as root: PostgreSQL runs as the postgres user" >&2; exit 1; }

work=$(mktemp -d /tmp/faultbench-pgbench.XXXXXX)
chmod 755 "$work"
as_pg() { setpriv --reuid=postgres --regid=postgres --clear-groups -- "$@"; }
cleanup() {
  [ -f "$work/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

port=
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free port" >&2; exit 1; }
mkdir "$work/data" && chown postgres:postgres "$work/data"
as_pg "$PGBIN/initdb" -D "$work/data" -A trust -U postgres >"$work/initdb.log" 2>&1
as_pg "$PGBIN/pg_ctl" -D "$work/data" -l "$work/data/server.log" -w \
  -o "-p $port -c listen_addresses=127.0.0.1 -k $work/data -c max_connections=200 -c shared_buffers=128MB" start >/dev/null
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres
"$PGBIN/psql" -q -d postgres -c "CREATE DATABASE faultbench" -c "CREATE DATABASE pgbench"

echo "faultbench vs pgbench: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, $THREADS clients, $RECORDS records, ${DURATION}s, $(nproc) cores"
fb() { # fb NAME ARGS...: run faultbench, print its throughput
  "$BIN" "$@" -p postgres.hosts="127.0.0.1:$port" -p recordcount="$RECORDS" -q --runs "$work/runs" >/dev/null
}
tp() { grep -m1 '"throughput_ops"' "$(ls "$work"/runs/*-"$1"/summary.json)" | tr -dc '0-9.'; }
fb load postgres-ha -P workloads/workloadc -threads 16 --name load
fb run postgres-ha -P workloads/workloadc -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS" --name reads
fb run postgres-ha -P workloads/workloada -p readproportion=0 -p updateproportion=1 -p operationcount=0 \
  -p maxexecutiontime="$DURATION" -threads "$THREADS" --name updates
fb_r=$(tp reads); fb_u=$(tp updates)

scale=$(( (RECORDS + 99999) / 100000 ))
"$PGBIN/pgbench" -q -i -s "$scale" pgbench >/dev/null 2>&1
printf '\\set aid random(1, %d * :scale)\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n' 100000 >"$work/update.sql"
pgb() { "$PGBIN/pgbench" -n -M prepared -c "$THREADS" -j 2 -T "$DURATION" "$@" pgbench 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
pg_r=$(pgb -S); pg_u=$(pgb -f "$work/update.sql")

awk -v fr="$fb_r" -v fu="$fb_u" -v pr="$pg_r" -v pu="$pg_u" 'BEGIN {
  printf "%-44s %12s %12s %8s\n", "", "faultbench", "pgbench", "ratio"
  printf "%-44s %12.0f %12.0f %8.2f\n", "reads by key (workload C / -S), ops/s", fr, pr, fr / pr
  printf "%-44s %12.0f %12.0f %8.2f\n", "updates of one record (update-only / script)", fu, pu, fu / pu
}'
