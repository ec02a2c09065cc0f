#!/usr/bin/env bash
# The durability table of issue 27: for each target and durability setting,
# the acknowledged writes lost after a power loss of one node and of every
# node at once, and the time to recover. Each cell is one run of a shipped
# scenario (scenarios/durability-TARGET.yaml: the nodes' data directories on
# the disk layer, an insert-heavy closed-loop load, `disk-sync` at 3 s, `power-loss` at 15 s,
# `start` 2 s later, 30-40 s measured, the per-operation lost-write check)
# with the setting given by --set and the victim by --set schedule.1.node.
# Columns: lost = acknowledged writes the per-operation check found lost
# (checks.lost-writes anomaly_counts.lost-write) of all acknowledged writes
# (lost_writes.acked_writes); final-state = lost_writes.lost_acked_writes +
# lost_inserts; restart = how long the `start` step took (the node(s)
# serving again: recovery from what survived included); unavailable = the
# fault's downtime plus the downtime after the restore (availability
# figures, docs/metrics.md).
#
# Needs root, /dev/fuse and the databases of scripts/setup.sh. Run on a
# quiet machine (each cell starts its own cluster; about an hour for all).
# Environment: FAULTBENCH_BIN (bin/faultbench), TARGETS (the targets to run,
# default "redis etcd postgres-ha galera cassandra txkv"), OUT (the markdown
# table, default docs/results/durability-table.md), KEEP=1 keeps the run
# directories (in $WORK, default a fresh directory under /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FAULTBENCH_BIN:-bin/faultbench}
TARGETS=${TARGETS:-redis etcd postgres-ha galera cassandra txkv}
OUT=${OUT:-docs/results/durability-table.md}
command -v "$BIN" >/dev/null || { echo "missing $BIN (run make build)" >&2; exit 1; }
command -v jq >/dev/null || { echo "missing jq (apt-get install jq)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "the disk layer needs root" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "the disk layer needs /dev/fuse" >&2; exit 1; }

WORK=${WORK:-$(mktemp -d /tmp/faultbench-durability.XXXXXX)}
chmod 755 "$WORK" # nodes that run as mysql or postgres walk into it
cleanup() {
  "$BIN" cleanup --all --state-dir "$WORK/state" >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# settings TARGET: one line per setting, "LABEL|--set ...|--set ..."
settings() {
  case $1 in
    redis) printf '%s\n' \
      "appendfsync=always|target.options.redis.appendfsync=always" \
      "appendfsync=everysec|target.options.redis.appendfsync=everysec" \
      "appendfsync=no|target.options.redis.appendfsync=no" ;;
    etcd) printf '%s\n' \
      "fsync (default)|target.options.etcd.unsafe-no-fsync=false" \
      "unsafe-no-fsync|target.options.etcd.unsafe-no-fsync=true" ;;
    postgres-ha) printf '%s\n' \
      "synchronous_commit=on, sync standby|target.options.postgres.synchronous-commit=on|target.options.postgres.synchronous-standby=on" \
      "synchronous_commit=on, async standby|target.options.postgres.synchronous-commit=on|target.options.postgres.synchronous-standby=off" \
      "synchronous_commit=off, sync standby|target.options.postgres.synchronous-commit=off|target.options.postgres.synchronous-standby=on" \
      "synchronous_commit=off, async standby|target.options.postgres.synchronous-commit=off|target.options.postgres.synchronous-standby=off" ;;
    galera) printf '%s\n' \
      "innodb_flush_log_at_trx_commit=1|target.options.galera.innodb-flush-log-at-trx-commit=1" \
      "innodb_flush_log_at_trx_commit=2|target.options.galera.innodb-flush-log-at-trx-commit=2" \
      "innodb_flush_log_at_trx_commit=0|target.options.galera.innodb-flush-log-at-trx-commit=0" ;;
    cassandra) printf '%s\n' \
      "commitlog_sync=batch|target.options.cassandra.commitlog-sync=batch" \
      "commitlog_sync=periodic (10 s)|target.options.cassandra.commitlog-sync=periodic" ;;
    txkv) printf '%s\n' \
      "persistence=sync|target.options.txkv.persistence=sync" \
      "persistence=async|target.options.txkv.persistence=async" ;;
    *) echo "unknown target $1" >&2; return 1 ;;
  esac
}

# victims TARGET: "LABEL|SELECTOR" for one node and for all nodes
victims() {
  case $1 in
    redis) echo "one node (the only one)|n1" ;;
    etcd) printf '%s\n' "one (leader)|leader" "all|all" ;;
    postgres-ha) printf '%s\n' "one (primary's node)|n1-keeper" "all|all" ;;
    galera) printf '%s\n' "one (n1, written to)|n1" "all|all" ;;
    cassandra) printf '%s\n' "one (n1)|n1" "all|all" ;;
    txkv) printf '%s\n' "one (coordinator)|coord" "all|all" ;;
  esac
}

rows=()
cell=0
start=$(date +%s)
echo "durability table: $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), work $WORK" >&2
for t in $TARGETS; do
  while IFS= read -r s; do
    label=${s%%|*}
    sets=()
    IFS='|' read -ra kv <<<"${s#*|}"
    for x in "${kv[@]}"; do sets+=(--set "$x"); done
    while IFS= read -r v; do
      vlabel=${v%%|*}
      sel=${v#*|}
      cell=$((cell + 1))
      name="dur$cell"
      echo "[$cell] $t, $label, power loss of $vlabel ..." >&2
      row="| $t | $label | $vlabel |"
      if "$BIN" scenario "scenarios/durability-$t.yaml" "${sets[@]}" --set "schedule.1.node=$sel" \
        --runs "$WORK/runs/$name" --state-dir "$WORK/state" >"$WORK/$name.out" 2>&1; then :; fi
      dir=$(ls -d "$WORK"/runs/"$name"/*/ 2>/dev/null | tail -1 || true)
      dir=${dir%/}
      if [ -z "$dir" ] || [ ! -f "$dir/summary.json" ]; then
        echo "  failed: $(tail -3 "$WORK/$name.out" | tr '\n' ' ')" >&2
        rows+=("$row failed | | | | |")
        continue
      fi
      sum="$dir/summary.json"
      lost=$(jq -r '.checks["lost-writes"].anomaly_counts["lost-write"] // "?"' "$sum")
      acked=$(jq -r '.lost_writes.acked_writes // "?"' "$sum")
      final=$(jq -r 'if .lost_writes then (.lost_writes.lost_acked_writes + .lost_writes.lost_inserts) else "?" end' "$sum")
      unavail=$(jq -r '[.availability.faults[]? | select(.fault.action == "power-loss")][0] | if . then ((.downtime_ms + (if .restore_downtime_ms > 0 then .restore_downtime_ms else 0 end)) | floor) else "?" end' "$sum")
      restart=$(jq -rs '[.[] | select(.fault == "victim" and .action == "start")] as $e
        | ([$e[] | select(.kind == "fault-restore")][0].t_ns) as $a
        | ([$e[] | select(.kind == "fault-restored")][0].t_ns) as $b
        | if $a and $b then (($b - $a) / 1e6 | floor) else "?" end' "$dir/events.jsonl")
      valid=$(jq -r '.checks["lost-writes"].valid // "?"' "$sum")
      echo "  lost $lost of $acked (final-state $final), restart ${restart} ms, unavailable ${unavail} ms, valid $valid" >&2
      rows+=("$row $lost of $acked | $final | $restart | $unavail | $valid |")
    done < <(victims "$t")
  done < <(settings "$t")
done

{
  echo "# Durability under power loss"
  echo
  echo "Generated by \`bench/durability.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(( ($(date +%s) - start) / 60 )) min;"
  echo "faultbench $("$BIN" version 2>/dev/null | head -1 || echo '?'). One run per cell (scenarios/durability-TARGET.yaml):"
  echo "everything durable at 3 s (disk-sync), power loss at 15 s of the measured run under an insert-heavy"
  echo "closed-loop load, the node(s) started again 2 s later, the per-operation lost-write check after the run."
  echo
  echo "| target | setting | power loss of | acknowledged writes lost (per operation) | lost (final state) | restart (ms) | unavailable (ms) | check valid |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} >"$OUT"
cat "$OUT"
echo "table written to $OUT" >&2
