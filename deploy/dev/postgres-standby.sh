#!/usr/bin/env bash
# A throwaway PostgreSQL primary + streaming-replication hot standby on this machine, for
# failover experiments (the shared cluster on 5432 is never touched). Two nodes, fixed
# ports 5441 and 5442, either of which can be the primary; trust auth, user "postgres",
# each standby on its own physical replication slot named after it (node_<port>).
#
#   start         initdb/start a primary on 5441 and pg_basebackup a standby on 5442, then
#                 wait until it streams; safe to rerun (starts what is down, rejoins a
#                 stopped old primary as a standby of the live one)
#   promote       promote the standby and print how long until it accepts writes
#   kill-primary  SIGKILL the primary's postmaster
#   rejoin        make the non-primary node a standby of the primary again (pg_rewind,
#                 falling back to a fresh pg_basebackup)
#   status        one line per port: primary / standby / down
#   stop          stop both nodes and remove their data
#
# Usage: deploy/dev/postgres-standby.sh start|promote|kill-primary|rejoin|status|stop
# Env: HERMES_PG_DIR (default /tmp/hermes-pg), HERMES_PG_BIN (default Debian PG 15),
#      HERMES_PG_SYNC=1 (synchronous replication: a promotion loses no committed row),
#      HERMES_PG_OSUSER (OS user the servers run as when invoked as root; default postgres)
set -euo pipefail

base=${HERMES_PG_DIR:-/tmp/hermes-pg}
bin=${HERMES_PG_BIN:-/usr/lib/postgresql/15/bin}
osuser=${HERMES_PG_OSUSER:-postgres}
ports=(5441 5442)
cd /  # the server user may not be able to read the caller's working directory

die() { echo "postgres-standby: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
# Server-side commands run as a non-root user: postgres refuses to run as root.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u "$osuser" -- "$@"; else "$@"; fi; }
dir_of() { echo "$base/node_$1"; }
other() { [[ $1 == "${ports[0]}" ]] && echo "${ports[1]}" || echo "${ports[0]}"; }
sql() { # sql PORT QUERY: one unaligned result, connecting over TCP as postgres
  "$bin/psql" -X -qtA -v ON_ERROR_STOP=1 \
    "host=127.0.0.1 port=$1 user=postgres dbname=postgres connect_timeout=2" -c "$2"
}
# role PORT: primary | standby | down
role() {
  local r
  r=$(sql "$1" "SELECT pg_is_in_recovery()" 2>/dev/null) || { echo down; return; }
  [[ $r == t ]] && echo standby || echo primary
}
# A SIGKILLed postmaster can linger as a zombie (PID 1 here reaps late) that pg_ctl and
# postgres' own lock-file check still take for a live server: treat it as down, and wait
# for it to be reaped before starting anything on that data dir.
pm_state() { # state letter of the node's postmaster, empty when there is none
  local pid; pid=$(head -1 "$(dir_of "$1")/postmaster.pid" 2>/dev/null) || return 0
  awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true
}
running() { local st; st=$(pm_state "$1"); [[ -n $st && $st != Z ]]; }
wait_reaped() {
  local deadline=$(($(now_ms) + 30000))
  while [[ $(pm_state "$1") == Z ]]; do
    (($(now_ms) < deadline)) || die "node $1's dead postmaster is still a zombie after 30s"
    sleep 0.05
  done
}
has_data() { [[ -f $(dir_of "$1")/PG_VERSION ]]; }
timeline() { # timeline of a stopped node's last checkpoint
  as_pg "$bin/pg_controldata" "$(dir_of "$1")" | awk -F: '/Latest checkpoint.s TimeLineID/ {print $2+0}'
}

prepare_base() {
  mkdir -p "$base"
  [[ $(id -u) == 0 ]] && chown "$osuser:" "$base"
  return 0
}

# Node-specific settings; postgresql.conf includes this file last. Rewritten before every
# start because pg_basebackup and pg_rewind copy the other node's files over ours.
write_node_conf() {
  cat >"$(dir_of "$1")/node.conf" <<EOF
port = $1
cluster_name = 'node_$1'
unix_socket_directories = '$base'
EOF
  [[ $(id -u) == 0 ]] && chown "$osuser:" "$(dir_of "$1")/node.conf"
  return 0
}

start_node() {
  running "$1" && return 0
  wait_reaped "$1"
  write_node_conf "$1"
  as_pg "$bin/pg_ctl" -D "$(dir_of "$1")" -l "$base/node_$1.log" -w -t 60 start >/dev/null \
    || die "node $1 did not start; see $base/node_$1.log"
}

init_primary() {
  local d; d=$(dir_of "$1")
  as_pg "$bin/initdb" -D "$d" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  cat >>"$d/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
hot_standby = on
wal_log_hints = on          # lets pg_rewind turn an old primary into a standby...
wal_keep_size = 256MB       # ...which needs its WAL back to the last common checkpoint
wal_retrieve_retry_interval = 1s  # a standby reconnects to a restarted primary within ~1s
shared_buffers = 32MB
max_connections = 50
include_if_exists = 'node.conf'
EOF
}

ensure_slot() { # ensure_slot PRIMARY_PORT STANDBY_PORT
  sql "$1" "SELECT pg_create_physical_replication_slot('node_$2') WHERE NOT EXISTS
            (SELECT 1 FROM pg_replication_slots WHERE slot_name = 'node_$2')" >/dev/null
}

basebackup() { # basebackup PRIMARY_PORT STANDBY_PORT
  rm -rf "$(dir_of "$2")"
  ensure_slot "$1" "$2"
  as_pg "$bin/pg_basebackup" -D "$(dir_of "$2")" -d "host=127.0.0.1 port=$1 user=postgres" \
    -X stream -R -S "node_$2" -c fast
}

wait_streaming() { # wait_streaming PRIMARY_PORT STANDBY_PORT
  local deadline=$(($(now_ms) + 60000))
  until [[ $(sql "$1" "SELECT state FROM pg_stat_replication WHERE application_name = 'node_$2'" 2>/dev/null) == streaming ]]; do
    (($(now_ms) < deadline)) || die "node $2 is not streaming from $1 after 60s"
    sleep 0.1
  done
}

# Turn STANDBY_PORT (stopped, or a diverged primary) into a standby of PRIMARY_PORT.
rejoin_node() {
  local p=$1 s=$2 d; d=$(dir_of "$2")
  running "$s" && { as_pg "$bin/pg_ctl" -D "$d" -m immediate -w stop >/dev/null || true; }
  running "$s" && die "could not stop node $s"
  wait_reaped "$s"
  ensure_slot "$p" "$s"
  sql "$p" "CHECKPOINT" >/dev/null  # pg_rewind reads the source's timeline from its checkpoint
  if as_pg "$bin/pg_rewind" -D "$d" --source-server="host=127.0.0.1 port=$p user=postgres" \
      >"$base/rewind_$s.log" 2>&1; then
    echo "rejoin: pg_rewind of node $s from $p done"
    rm -rf "$d"/pg_replslot/*  # slots it had as a primary would pin WAL forever
    as_pg sed -i '/^primary_conninfo\|^primary_slot_name/d' "$d/postgresql.auto.conf"
    cat >>"$d/postgresql.auto.conf" <<EOF
primary_conninfo = 'host=127.0.0.1 port=$p user=postgres'
primary_slot_name = 'node_$s'
EOF
    as_pg touch "$d/standby.signal"
  else
    echo "rejoin: pg_rewind failed (see $base/rewind_$s.log); taking a fresh base backup"
    basebackup "$p" "$s"
  fi
  start_node "$s"
}

cmd_start() {
  local t0 p s; t0=$(now_ms)
  prepare_base
  has_data 5441 || has_data 5442 || init_primary 5441
  # The primary: a node already serving writes, else one without standby.signal (the
  # higher timeline wins when both lack it, i.e. a promoted standby beats its old primary).
  p=""
  for n in "${ports[@]}"; do [[ $(role "$n") == primary ]] && p=${p:-$n}; done
  if [[ -z $p ]]; then
    for n in "${ports[@]}"; do
      has_data "$n" && [[ ! -f $(dir_of "$n")/standby.signal ]] || continue
      if [[ -z $p ]] || (($(timeline "$n") > $(timeline "$p"))); then p=$n; fi
    done
  fi
  [[ -n $p ]] || die "no node can be the primary (both are standbys); run stop then start"
  start_node "$p"
  s=$(other "$p")
  if ! has_data "$s"; then
    basebackup "$p" "$s"; start_node "$s"
  elif [[ ! -f $(dir_of "$s")/standby.signal ]]; then
    rejoin_node "$p" "$s"  # an old primary (or a second primary): rewind it onto $p
  else
    ensure_slot "$p" "$s"; start_node "$s"
  fi
  wait_streaming "$p" "$s"
  if [[ ${HERMES_PG_SYNC:-0} == 1 ]]; then
    # A commit returns once the standby has it, so a promotion loses no committed row. Set
    # on the primary only (ALTER SYSTEM is not replicated): the promoted node does not wait
    # for a standby it no longer has.
    sql "$p" "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
    sql "$p" "SELECT pg_reload_conf()" >/dev/null
  fi
  echo "start: primary $p, standby $s streaming ($(($(now_ms) - t0)) ms)"
}

cmd_promote() {
  local s="" t0
  for n in "${ports[@]}"; do [[ $(role "$n") == standby ]] && s=$n; done
  [[ -n $s ]] || die "no running standby to promote"
  t0=$(now_ms)
  as_pg "$bin/pg_ctl" -D "$(dir_of "$s")" promote -W >/dev/null
  until [[ $(sql "$s" "SELECT pg_is_in_recovery()" 2>/dev/null) == f ]]; do
    (($(now_ms) - t0 < 60000)) || die "node $s still in recovery after 60s"
    sleep 0.02
  done
  echo "promote: node $s is primary after $(($(now_ms) - t0)) ms"
  sql "$s" "CHECKPOINT" >/dev/null  # records the new timeline for pg_rewind / start
}

cmd_kill_primary() {
  local p="" pid t0
  for n in "${ports[@]}"; do [[ $(role "$n") == primary ]] && p=$n; done
  [[ -n $p ]] || die "no running primary"
  pid=$(head -1 "$(dir_of "$p")/postmaster.pid")
  t0=$(now_ms)
  kill -KILL "$pid"
  while running "$p" || [[ $(role "$p") != down ]]; do sleep 0.02; done
  echo "kill-primary: SIGKILLed postmaster $pid of node $p; down after $(($(now_ms) - t0)) ms"
}

cmd_rejoin() {
  local p=""
  for n in "${ports[@]}"; do [[ $(role "$n") == primary ]] && p=$n; done
  [[ -n $p ]] || die "no running primary to rejoin"
  [[ $(role "$(other "$p")") == standby ]] && { echo "rejoin: node $(other "$p") is already a standby"; return; }
  rejoin_node "$p" "$(other "$p")"
  wait_streaming "$p" "$(other "$p")"
  echo "rejoin: node $(other "$p") is streaming from $p"
}

cmd_status() {
  local r up
  for n in "${ports[@]}"; do
    r=$(role "$n")
    case $r in
      primary) up=$(sql "$n" "SELECT coalesce(string_agg(application_name || ' ' || state, ', '), 'none') FROM pg_stat_replication")
               echo "$n: primary (replicas: $up)" ;;
      standby) up=$(sql "$n" "SELECT coalesce(max(status), 'no wal receiver') FROM pg_stat_wal_receiver")
               echo "$n: standby ($up)" ;;
      *)       echo "$n: down" ;;
    esac
  done
}

cmd_stop() {
  for n in "${ports[@]}"; do
    running "$n" && as_pg "$bin/pg_ctl" -D "$(dir_of "$n")" -m fast -w stop >/dev/null
    rm -rf "$(dir_of "$n")" "$base/node_$n.log" "$base/rewind_$n.log"
  done
  rmdir "$base" 2>/dev/null || true
  echo "stop: both nodes stopped, data removed"
}

case ${1:-} in
  start) cmd_start ;;
  promote) cmd_promote ;;
  kill-primary) cmd_kill_primary ;;
  rejoin) cmd_rejoin ;;
  status) cmd_status ;;
  stop) cmd_stop ;;
  *) echo "usage: $0 start|promote|kill-primary|rejoin|status|stop" >&2; exit 2 ;;
esac
