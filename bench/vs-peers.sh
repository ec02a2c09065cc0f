#!/usr/bin/env bash
# faultbench's client beside each target's native peer, in one invocation,
# against the same servers, the same concurrency, in alternating rounds (so
# that other load on the machine hits both sides alike):
#   redis      faultbench workload A  vs redis-benchmark (HGETALL and HSET of one
#              field, same record shape, no pipelining; its time is the two runs' sum)
#   etcd       faultbench workload A  vs bench/etcdloop (the same client library and
#              RPCs per operation, nothing else)
#   txkv       faultbench workload A  vs bench/txkvloop (the same client library and
#              calls per operation, nothing else)
#   postgres   YCSB path: faultbench workload A (uniform) vs pgbench -M prepared
#              running the same statements on a table of the same shape (a read
#              script in the form of pgbench's select-only, a one-UPDATE script in
#              the form of its simple-update; weights 1:1, one statement each);
#              TPC-C path: faultbench TPC-C vs sysbench oltp_read_write, per
#              statement counted by the server (pg_stat_statements)
#   mariadb    YCSB path: faultbench workload A vs sysbench running bench/ycsb-a.lua
#              (the same statements, same table shape, prepared); TPC-C path:
#              faultbench TPC-C vs sysbench oltp_read_write, per statement counted
#              by the server (Questions less BEGIN/COMMIT/ROLLBACK)
#   cassandra  faultbench workload A (uniform, consistency ONE) vs bench/cqlloop
#              (the same gocql client, statements and consistency level, 10
#              fields of 100 bytes). Not cassandra-stress: it cannot be had
#              here (Maven Central serves no org.apache.cassandra:cassandra-stress
#              of any version, the cached cassandra-all jar has no stress
#              classes, the binary tarball that ships tools/bin/cassandra-stress
#              comes only from the Apache download sites, which this project's
#              machines do not reach, and Debian packages no Cassandra)
#   history    bench/history-cost.sh: faultbench with the operation history off
#              and on (etcd and Redis), the ratio of client CPU per operation
# Every RESULT line: target, peer, throughput ratio (faultbench ops/s / peer
# ops/s, goal >= 0.9), client CPU per operation ratio (faultbench / peer,
# goal <= 1.3), the machine state when the pair ran (load average, date,
# commit) and the two commands ($WORK is the run's temporary directory). Client CPU is
# read from /proc/PID/stat of the client process only (bench/clientcpu: utime +
# stime when it exits), never the servers'; faultbench's whole process ("raw")
# and the same less the CPU of a 16-operation run of the same command ("net":
# start-up, connecting, report); external peers' whole process; the bare loops'
# (etcdloop, txkvloop, cqlloop) timed loop only, so they are compared on the net figure.
# The header prints the machine state: date, commit, cores, load average.
#
# Usage: bash bench/vs-peers.sh [TARGET...]     (default: all; or TARGETS="...")
# Environment: FAULTBENCH_BIN (bin/faultbench), DURATION (s per run, 15),
# ROUNDS (2), THREADS (16), RECORDS (Redis, 100000), KV_RECORDS (etcd, txkv,
# Cassandra, 10000), SQL_RECORDS (100000), TPCC_DURATION (30), WAREHOUSES (1).
# PostgreSQL and MariaDB need root (their servers run as their system users).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FAULTBENCH_BIN:-bin/faultbench}
DURATION=${DURATION:-15}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-16}
RECORDS=${RECORDS:-100000}
KV_RECORDS=${KV_RECORDS:-${ETCD_RECORDS:-10000}}
SQL_RECORDS=${SQL_RECORDS:-100000}
TPCC_DURATION=${TPCC_DURATION:-30}
WAREHOUSES=${WAREHOUSES:-1}
ALL="redis etcd txkv postgres mariadb cassandra history"
if [ $# -gt 0 ]; then TARGETS="$*"; else TARGETS=${TARGETS:-$ALL}; fi
for t in $TARGETS; do
  case " $ALL " in *" $t "*) ;; *) echo "unknown target $t (known: $ALL)" >&2; exit 2 ;; esac
done
want() { [[ " $TARGETS " == *" $1 "* ]]; }
command -v "$BIN" >/dev/null || { echo "missing $BIN (run make build)" >&2; exit 1; }
command -v go >/dev/null || { echo "missing go" >&2; exit 1; }
PGBIN=/usr/lib/postgresql/15/bin

work=$(mktemp -d /tmp/faultbench-bench.XXXXXX)
chmod 755 "$work" # the database servers' users read their directories below it
clusters=()       # "kind name" of clusters started with faultbench cluster up
redis_pid=
pg_up=
cleanup() {
  set +e
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  for c in "${clusters[@]}"; do
    read -r kind name <<<"$c"
    "$BIN" cluster down "$kind" --state-dir "$work/state" --name "$name" >/dev/null 2>&1
  done
  [ -n "$pg_up" ] && as_user postgres "$PGBIN/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
as_user() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"; }

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
echo "faultbench vs peers: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $commit, $(nproc) cores, load average $(loadavg) at the start"
echo "  targets: $TARGETS; $THREADS clients, ${DURATION}s per run, $ROUNDS alternating rounds (TPC-C paths: ${TPCC_DURATION}s, 1 round)"
echo "  command: DURATION=$DURATION ROUNDS=$ROUNDS THREADS=$THREADS bash bench/vs-peers.sh $TARGETS"

go build -o "$work/clientcpu" ./bench/clientcpu

# measured NAME COMMAND...: run the client command, its stdout in $work/out,
# stderr in $work/err; its CPU seconds appended to $work/NAME.cpu
measured() {
  local n=$1; shift
  lastcmd=$(printf '%q ' "$@"); lastcmd=${lastcmd% }; lastcmd=${lastcmd//$work/\$WORK}
  "$work/clientcpu" -o "$work/$n.cpu" -- "$@" >"$work/out" 2>"$work/err" || {
    echo "failed: $*" >&2; tail -20 "$work/err" >&2; return 1; }
}
lastcpu() { tail -1 "$work/$1.cpu" | awk '{print $2}'; }
summary() { ls -d "$work"/runs/*-"$1" | tail -1; }
field() { grep -m1 "\"$2\"" "$1/summary.json" | tr -dc '0-9.'; }

# result PAIR CLIENT OPS SECONDS CPU_SECONDS: one line per round
: >"$work/results"
result() {
  echo "$*" >>"$work/results"
  # the pair's commands (the last of each side) and the machine state at its first result
  printf '%s|%s|%s\n' "$1" "$2" "$lastcmd" >>"$work/cmds"
  grep -q "^$1|" "$work/state.txt" 2>/dev/null ||
    printf '%s|load average %s, %s, commit %s\n' "$1" "$(loadavg)" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$commit" >>"$work/state.txt"
}
lastcmd=
: >"$work/cmds"
: >"$work/state.txt"
# pair PAIR PEER KIND DESCRIPTION: KIND proc (whole process) or loop (timed loop)
: >"$work/pairs"
pair() { echo "$1|$2|$3|$4" >>"$work/pairs"; }
# fixed PAIR COMMAND...: faultbench's CPU for a 16-operation run of the command
: >"$work/fixed"
fixed() {
  local p=$1; shift
  measured fixed "$@" -p operationcount=16 -p maxexecutiontime=0 -threads "$THREADS" -q --runs "$work/runs" --name "fixed$p"
  echo "$p $(lastcpu fixed)" >>"$work/fixed"
}
# fbrun PAIR NAME COMMAND...: a measured faultbench run; its result line
fbrun() {
  local p=$1 n=$2; shift 2
  measured fb "$@" -q --runs "$work/runs" --name "$n"
  local s ops
  s=$(summary "$n"); ops=$(field "$s" operations)
  result "$p" faultbench "$ops" "$(awk -v o="$ops" -v t="$(field "$s" throughput_ops)" 'BEGIN {printf "%.3f", o / t}')" "$(lastcpu fb)"
}
freeport() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "no free port" >&2; return 1
}
# up KIND NAME [ARGS...]: faultbench cluster up; sets addr to node n1's (or the coordinator's)
# address. Not in a command substitution: the cluster must be recorded for the cleanup.
up() {
  local kind=$1 name=$2; shift 2
  clusters+=("$kind $name")
  "$BIN" cluster up "$kind" --dir "$work/$name" --state-dir "$work/state" --name "$name" "$@" >/dev/null
  addr=$("$BIN" cluster status "$kind" --state-dir "$work/state" --name "$name" | awk '$1 == "n1" || $1 == "coord" {print $5; exit}')
}
skip() { echo "$1: skipped: $2"; echo "$1|skipped|$2" >>"$work/skipped"; }

# ---------------------------------------------------------------- Redis
if want redis; then
  if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    skip redis "redis-server or redis-benchmark missing (scripts/setup.sh)"
  else
    port=$(freeport)
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$work" --logfile "$work/redis.log" &
    redis_pid=$!
    for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    echo "redis: redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$port, $RECORDS records of 10 fields x 100 bytes"
    pair redis redis-benchmark proc "workload A vs redis-benchmark -c $THREADS HGETALL + HSET (same record shape)"
    "$BIN" load redis -P workloads/workloada -p recordcount="$RECORDS" -p redis.addr="127.0.0.1:$port" -threads 16 -q --runs "$work/runs" --name rload
    v=$(head -c 100 /dev/zero | tr '\0' 'x')
    fields=(); for i in $(seq 0 9); do fields+=("field$i" "$v"); done
    redis-benchmark -p "$port" -c 16 -n "$RECORDS" -r "$RECORDS" -q HSET "bench:__rand_int__" "${fields[@]}" >/dev/null
    fb=("$BIN" run redis -P workloads/workloada -p recordcount="$RECORDS" -p redis.addr="127.0.0.1:$port")
    fixed redis "${fb[@]}"
    rbrun() { # rbrun N ARGS...: requests per second of one redis-benchmark run
      measured rb redis-benchmark -p "$port" -c "$THREADS" -n "$1" -r "$RECORDS" --csv "${@:2}"
      tail -1 "$work/out" | cut -d, -f2 | tr -dc '0-9.'
    }
    for r in $(seq 1 "$ROUNDS"); do
      fbrun redis "redis$r" "${fb[@]}" -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS"
      ops=$(tail -1 "$work/results" | awk '{print $3}')
      half=$((ops / 2)); [ "$half" -gt 1000 ] || half=1000
      get=$(rbrun "$half" HGETALL "bench:__rand_int__"); c1=$(lastcpu rb)
      set=$(rbrun "$half" HSET "bench:__rand_int__" field0 "$v"); c2=$(lastcpu rb)
      # (rbrun ran in command substitutions: the peer's command line is written out here)
      lastcmd="redis-benchmark -p $port -c $THREADS -n $half -r $RECORDS --csv HGETALL bench:__rand_int__; the same with HSET bench:__rand_int__ field0 <100 bytes>"
      result redis redis-benchmark "$((half * 2))" "$(awk -v n="$half" -v a="$get" -v b="$set" 'BEGIN {printf "%.3f", n / a + n / b}')" \
        "$(awk -v a="$c1" -v b="$c2" 'BEGIN {printf "%.3f", a + b}')"
    done
  fi
fi

# ---------------------------------------------------------------- etcd, txkv: bare loops of the same client
# loop KIND PAIR LOOPDIR ADDRKEY LOOPFLAG NODES
loop() {
  local kind=$1 p=$2 dir=$3 key=$4 flag=$5 nodes=$6
  go build -o "$work/$p-loop" "./bench/$dir"
  up "$kind" "b$p" --nodes "$nodes"
  echo "$p: $kind ($nodes node(s), started by faultbench) at $addr, $KV_RECORDS records"
  pair "$p" "$dir" loop "workload A vs bench/$dir (the same client library and calls, nothing else)"
  "$BIN" load "$kind" -P workloads/workloada -p recordcount="$KV_RECORDS" -p "$key=$addr" -threads 16 -q --runs "$work/runs" --name "load$p"
  local fb=("$BIN" run "$kind" -P workloads/workloada -p recordcount="$KV_RECORDS" -p "$key=$addr")
  fixed "$p" "${fb[@]}"
  for r in $(seq 1 "$ROUNDS"); do
    fbrun "$p" "$p$r" "${fb[@]}" -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS"
    measured loop "$work/$p-loop" "$flag" "$addr" -threads "$THREADS" -records "$KV_RECORDS" -duration "${DURATION}s"
    local ops secs cpus
    read -r _ ops _ secs _ cpus _ <"$work/out"
    result "$p" "$dir" "$ops" "$secs" "$cpus"
  done
}
want etcd && loop etcd etcd etcdloop etcd.endpoints -endpoints 1
want txkv && loop txkv txkv txkvloop txkv.coordinator -coordinator 2

# ---------------------------------------------------------------- SQL: PostgreSQL and MariaDB
cols="ycsb_key, field0, field1, field2, field3, field4, field5, field6, field7, field8, field9"
# ycsbfb PAIR PROPS...: faultbench's rounds of workload A (uniform keys) on a SQL target;
# the caller runs the peer between them through the function peer_round
ycsb_rounds() {
  local p=$1; shift
  local fb=("$BIN" run "$@" -P workloads/workloada -p recordcount="$SQL_RECORDS" -p requestdistribution=uniform)
  fixed "$p" "${fb[@]}"
  for r in $(seq 1 "$ROUNDS"); do
    fbrun "$p" "$p$r" "${fb[@]}" -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS"
    peer_round
  done
}

if want postgres; then
  if [ "$(id -u)" -ne 0 ] || [ ! -x "$PGBIN/pgbench" ]; then
    skip postgres "needs root and PostgreSQL 15 with pgbench (scripts/setup.sh --only postgres)"
  else
    port=$(freeport)
    mkdir "$work/pg" && chown postgres:postgres "$work/pg"
    as_user postgres "$PGBIN/initdb" -D "$work/pg" -A trust -U postgres >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; exit 1; }
    as_user postgres "$PGBIN/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -w -o "-p $port -c listen_addresses=127.0.0.1 -k $work/pg \
      -c max_connections=200 -c shared_buffers=256MB -c shared_preload_libraries=pg_stat_statements" start >/dev/null
    pg_up=1
    export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres
    psqlq() { "$PGBIN/psql" -X -q -A -t "$@"; }
    psqlq -d postgres -c "CREATE DATABASE faultbench" -c "CREATE DATABASE sbtest"
    psqlq -d faultbench -c "CREATE EXTENSION pg_stat_statements"
    psqlq -d sbtest -c "CREATE EXTENSION pg_stat_statements"
    echo "postgres: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') (plain, no replication) on 127.0.0.1:$port, $SQL_RECORDS records"
    "$BIN" load postgres-ha -P workloads/workloada -p recordcount="$SQL_RECORDS" -p postgres.hosts="127.0.0.1:$port" -threads 16 -q --runs "$work/runs" --name pgload
    # the peer's table: the same shape, keys user0..user<N-1>
    psqlq -d faultbench -c "CREATE TABLE ycsbpeer (ycsb_key VARCHAR(255) PRIMARY KEY, field0 BYTEA, field1 BYTEA, field2 BYTEA,
      field3 BYTEA, field4 BYTEA, field5 BYTEA, field6 BYTEA, field7 BYTEA, field8 BYTEA, field9 BYTEA)" \
      -c "INSERT INTO ycsbpeer SELECT 'user' || i, v, v, v, v, v, v, v, v, v, v FROM generate_series(0, $((SQL_RECORDS - 1))) i,
      LATERAL (SELECT convert_to(substr(repeat(md5(i::text), 4), 1, 100), 'UTF8') AS v) x" -c "VACUUM ANALYZE ycsbpeer"
    printf '\\set id random(0, %d)\nSELECT %s FROM ycsbpeer WHERE ycsb_key = %s;\n' $((SQL_RECORDS - 1)) "$cols" "'user' || :id::bigint" >"$work/read.sql"
    printf '\\set id random(0, %d)\nUPDATE ycsbpeer SET field0 = %s WHERE ycsb_key = %s;\n' $((SQL_RECORDS - 1)) \
      "'$(head -c 100 /dev/zero | tr '\0' 'x')'::bytea" "'user' || :id::bigint" >"$work/update.sql"
    pair postgres-ycsb pgbench proc "workload A (uniform) vs pgbench -M prepared -j 1, read (select-only form) + one-UPDATE (simple-update form) scripts 1:1, same table shape"
    peer_round() {
      measured pgb "$PGBIN/pgbench" -n -M prepared -c "$THREADS" -j 1 -T "$DURATION" -f "$work/read.sql@1" -f "$work/update.sql@1" faultbench
      local n tps
      n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
      tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out")
      result postgres-ycsb pgbench "$n" "$(awk -v n="$n" -v t="$tps" 'BEGIN {printf "%.3f", n / t}')" "$(lastcpu pgb)"
    }
    ycsb_rounds postgres-ycsb postgres-ha -p postgres.hosts="127.0.0.1:$port"

    # TPC-C path: statements counted by the server for both clients
    pgstmts() {
      psqlq -d "$1" -c "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = '$1' AND s.query !~* '^(begin|commit|rollback|select pg_stat_statements_reset)'"
    }
    pgreset() { psqlq -d "$1" -c "SELECT pg_stat_statements_reset()" >/dev/null; }
    tpcc_threads=$((10 * WAREHOUSES))
    pair postgres-tpcc sysbench proc "TPC-C ($WAREHOUSES warehouse(s), $tpcc_threads terminals, no think times) vs sysbench oltp_read_write ($tpcc_threads threads), per statement counted by the server"
    fbt=("$BIN" run postgres-ha -P workloads/tpcc -p tpcc.warehouses="$WAREHOUSES" -p postgres.hosts="127.0.0.1:$port")
    "$BIN" load postgres-ha -P workloads/tpcc -p tpcc.warehouses="$WAREHOUSES" -p postgres.hosts="127.0.0.1:$port" -threads 8 -q --runs "$work/runs" --name pgtload
    sb=(sysbench oltp_read_write --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" --pgsql-user=postgres --pgsql-db=sbtest
      --tables=4 --table-size=100000 --threads="$tpcc_threads")
    "${sb[@]}" prepare >/dev/null 2>&1
    pgreset faultbench
    measured fb "${fbt[@]}" -p operationcount=0 -p maxexecutiontime="$TPCC_DURATION" -threads "$tpcc_threads" -q --runs "$work/runs" --name pgtpcc
    s=$(summary pgtpcc)
    result postgres-tpcc faultbench "$(pgstmts faultbench)" "$(awk -v o="$(field "$s" operations)" -v t="$(field "$s" throughput_ops)" 'BEGIN {printf "%.3f", o / t}')" "$(lastcpu fb)"
    pgreset sbtest
    measured sb "${sb[@]}" --time="$TPCC_DURATION" --report-interval=0 run
    result postgres-tpcc sysbench "$(pgstmts sbtest)" "$(sed -n 's/^ *total time: *\([0-9.]*\)s.*/\1/p' "$work/out")" "$(lastcpu sb)"
    as_user postgres "$PGBIN/pg_ctl" -D "$work/pg" -m fast stop >/dev/null && pg_up=
  fi
fi

if want mariadb; then
  if [ "$(id -u)" -ne 0 ] || ! command -v mariadbd >/dev/null || ! command -v sysbench >/dev/null; then
    skip mariadb "needs root, MariaDB and sysbench (scripts/setup.sh --only galera, --only sysbench)"
  else
    up galera bmaria --nodes 1
    host=${addr%:*} port=${addr##*:}
    echo "mariadb: MariaDB $(mariadbd --version | awk '{print $3}') (one Galera node, started by faultbench) at $addr, $SQL_RECORDS records"
    my() { mariadb -h "$host" -P "$port" -u faultbench -N -B faultbench "$@"; }
    "$BIN" load galera -P workloads/workloada -p recordcount="$SQL_RECORDS" -p galera.hosts="$addr" -threads 16 -q --runs "$work/runs" --name myload
    my -e "CREATE TABLE ycsbpeer (ycsb_key VARCHAR(255) PRIMARY KEY, field0 LONGBLOB, field1 LONGBLOB, field2 LONGBLOB, field3 LONGBLOB,
      field4 LONGBLOB, field5 LONGBLOB, field6 LONGBLOB, field7 LONGBLOB, field8 LONGBLOB, field9 LONGBLOB) ENGINE=InnoDB;
      INSERT INTO ycsbpeer SELECT CONCAT('user', seq), v, v, v, v, v, v, v, v, v, v
        FROM (SELECT seq, SUBSTR(REPEAT(MD5(seq), 4), 1, 100) AS v FROM seq_0_to_$((SQL_RECORDS - 1))) x"
    sbm=(sysbench --db-driver=mysql --mysql-host="$host" --mysql-port="$port" --mysql-user=faultbench --mysql-password= --mysql-db=faultbench)
    pair mariadb-ycsb sysbench proc "workload A (uniform) vs sysbench bench/ycsb-a.lua (the same statements, prepared, same table shape)"
    peer_round() {
      measured sb "${sbm[@]}" bench/ycsb-a.lua --records="$SQL_RECORDS" --threads="$THREADS" --time="$DURATION" --report-interval=0 run
      result mariadb-ycsb sysbench "$(sed -n 's/^ *transactions: *\([0-9]*\).*/\1/p' "$work/out")" \
        "$(sed -n 's/^ *total time: *\([0-9.]*\)s.*/\1/p' "$work/out")" "$(lastcpu sb)"
    }
    ycsb_rounds mariadb-ycsb galera -p galera.hosts="$addr"

    # TPC-C path: statements counted by the server (Questions less transaction control)
    mystmts() {
      my -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_begin', 'Com_commit', 'Com_rollback')" |
        awk '$1 == "Questions" {q = $2} $1 != "Questions" {c += $2} END {print q - c}'
    }
    tpcc_threads=$((10 * WAREHOUSES))
    pair mariadb-tpcc sysbench proc "TPC-C ($WAREHOUSES warehouse(s), $tpcc_threads terminals, no think times) vs sysbench oltp_read_write ($tpcc_threads threads), per statement counted by the server"
    "$BIN" load galera -P workloads/tpcc -p tpcc.warehouses="$WAREHOUSES" -p galera.hosts="$addr" -threads 8 -q --runs "$work/runs" --name mytload
    "${sbm[@]}" oltp_read_write --tables=4 --table-size=100000 prepare >/dev/null 2>&1
    s0=$(mystmts)
    measured fb "$BIN" run galera -P workloads/tpcc -p tpcc.warehouses="$WAREHOUSES" -p galera.hosts="$addr" \
      -p operationcount=0 -p maxexecutiontime="$TPCC_DURATION" -threads "$tpcc_threads" -q --runs "$work/runs" --name mytpcc
    s1=$(mystmts)
    s=$(summary mytpcc)
    result mariadb-tpcc faultbench "$((s1 - s0 - 1))" "$(awk -v o="$(field "$s" operations)" -v t="$(field "$s" throughput_ops)" 'BEGIN {printf "%.3f", o / t}')" "$(lastcpu fb)"
    measured sb "${sbm[@]}" oltp_read_write --tables=4 --table-size=100000 --threads="$tpcc_threads" --time="$TPCC_DURATION" --report-interval=0 run
    s2=$(mystmts)
    result mariadb-tpcc sysbench "$((s2 - s1 - 1))" "$(sed -n 's/^ *total time: *\([0-9.]*\)s.*/\1/p' "$work/out")" "$(lastcpu sb)"
  fi
fi

# ---------------------------------------------------------------- Cassandra: a bare gocql loop
# (cassandra-stress cannot be had here: see the header)
if want cassandra; then
  if ! ls "${XDG_CACHE_HOME:-$HOME/.cache}"/faultbench/cassandra-*/lib/cassandra-all-*.jar >/dev/null 2>&1; then
    skip cassandra "Cassandra is not installed (scripts/setup.sh --only cassandra)"
  else
    go build -o "$work/cqlloop" ./bench/cqlloop
    up cassandra bcass --nodes 1
    echo "cassandra: one node (started by faultbench) at $addr, $KV_RECORDS records, consistency ONE both sides"
    pair cassandra cqlloop loop "workload A (uniform, consistency ONE) vs bench/cqlloop (the same gocql client, statements and consistency, 10 fields of 100 bytes)"
    "$BIN" load cassandra -P workloads/workloada -p recordcount="$KV_RECORDS" -p cassandra.hosts="$addr" -threads 16 -q --runs "$work/runs" --name cload
    fb=("$BIN" run cassandra -P workloads/workloada -p recordcount="$KV_RECORDS" -p cassandra.hosts="$addr" -p requestdistribution=uniform -p cassandra.consistency=ONE)
    fixed cassandra "${fb[@]}"
    for r in $(seq 1 "$ROUNDS"); do
      fbrun cassandra "cass$r" "${fb[@]}" -p operationcount=0 -p maxexecutiontime="$DURATION" -threads "$THREADS"
      measured loop "$work/cqlloop" -hosts "$addr" -consistency ONE -threads "$THREADS" -records "$KV_RECORDS" -duration "${DURATION}s"
      read -r _ ops _ secs _ cpus _ <"$work/out"
      result cassandra cqlloop "$ops" "$secs" "$cpus"
    done
  fi
fi

echo "load average at the end of the peers: $(loadavg)"
awk '
FILENAME == ARGV[1] { fix[$1] = $2; next }
FILENAME == ARGV[2] { split($0, sp, "|"); np++; pname[np] = sp[1]; peer[sp[1]] = sp[2]; kind[sp[1]] = sp[3]; desc[sp[1]] = sp[4]; next }
FILENAME == ARGV[3] { i = index($0, "|"); p = substr($0, 1, i - 1); r = substr($0, i + 1); j = index(r, "|"); cmd[p, substr(r, 1, j - 1)] = substr(r, j + 1); next }
FILENAME == ARGV[4] { i = index($0, "|"); mstate[substr($0, 1, i - 1)] = substr($0, i + 1); next }
function median(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ k = $1 SUBSEP $2; n[k]++; nops[k, n[k]] = $3; tp[k, n[k]] = $3 / $4; cpu[k, n[k]] = $5 / $3 * 1e6
  net[k, n[k]] = ($2 == "faultbench" ? $5 - fix[$1] : $5) / $3 * 1e6 }
END {
  printf "\n%-14s %-17s %5s %12s %12s %14s\n", "pair", "client", "round", "ops/s", "operations", "CPU s per 1M"
  for (i = 1; i <= np; i++) for (side = 0; side < 2; side++) {
    p = pname[i]; cl = side ? peer[p] : "faultbench"; k = p SUBSEP cl
    for (r = 1; r <= n[k]; r++) printf "%-14s %-17s %5d %12.0f %12d %14.2f\n", p, cl, r, tp[k, r], nops[k, r], cpu[k, r]
  }
  print ""
  for (i = 1; i <= np; i++) {
    p = pname[i]; f = p SUBSEP "faultbench"; q = p SUBSEP peer[p]
    if (!n[f] || !n[q]) { printf "%s: no result\n", p; continue }
    m = n[f] < n[q] ? n[f] : n[q]
    for (r = 1; r <= m; r++) { tpf[r] = tp[f, r]; tpq[r] = tp[q, r]; cpf[r] = cpu[f, r]; cpq[r] = cpu[q, r]
      tr[r] = tpf[r] / tpq[r]; cr[r] = cpf[r] / cpq[r]; nr[r] = net[f, r] / cpq[r] }
    t = median(tr, m); cw = median(cr, m); cn = median(nr, m)
    judged = kind[p] == "loop" ? cn : cw
    verdict = (t >= 0.9 && judged <= 1.3) ? "meets" : "misses"
    printf "%s: %s\n", p, desc[p]
    printf "  faultbench %.0f ops/s at %.2f CPU s/1M ops, %s %.0f ops/s at %.2f (medians of %d rounds); faultbench start-up+report %.2f CPU s\n", median(tpf, m), median(cpf, m), peer[p], median(tpq, m), median(cpq, m), m, fix[p]
    printf "  RESULT %s vs %s: throughput ratio %.2f, CPU per operation ratio %.2f raw, %.2f net: %s the bar (>= 0.9, <= 1.3 %s); %s; faultbench: %s; %s: %s\n", p, peer[p], t, cw, cn, verdict, kind[p] == "loop" ? "net" : "raw", mstate[p], cmd[p, "faultbench"], peer[p], cmd[p, peer[p]]
  }
}' "$work/fixed" "$work/pairs" "$work/cmds" "$work/state.txt" "$work/results"
if [ -f "$work/skipped" ]; then sed 's/^\([^|]*\)|skipped|/RESULT \1: skipped: /' "$work/skipped"; fi

# ---------------------------------------------------------------- the history's cost
if want history; then
  echo
  CLIENTCPU="$work/clientcpu" DURATION="$DURATION" ROUNDS="$ROUNDS" THREADS="$THREADS" FAULTBENCH_BIN="$BIN" bash bench/history-cost.sh
fi
