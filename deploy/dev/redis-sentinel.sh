#!/usr/bin/env bash
# A throwaway Redis primary with two replicas and three Sentinels on this machine, for failover
# experiments (the shared Redis on 6379 is never touched). Data nodes on 6391-6393 (6391
# starts as the primary), Sentinels on 26391-26393 watching master "hermes" with quorum 2,
# calling a primary down after 1 s. Nothing is kept on disk: a restarted node comes back empty
# and resyncs from whichever node is the primary then.
#
#   start              start what is down and wait until the Sentinels agree on a primary
#                      with two replicas; safe to rerun
#   primary            the port of the primary the Sentinels name
#   kill-primary       SIGKILL the primary; prints its port
#   failover           ask the Sentinels to hand over to a replica while the primary lives
#                      (it is demoted to a replica); prints the old primary's port
#   wait-moved PORT    wait until the Sentinels name a primary other than PORT; prints it
#                      and how long the wait took
#   wait-replicated    wait until both replicas have every write the primary took so far
#   freeze-replicas    SIGSTOP the replicas and cut their links, so writes from now on
#                      reach the primary only
#                      (a failover then loses them, as with replication lag); prints them
#   thaw-replicas      SIGCONT them
#   start-node PORT    start a data node again, as a replica of the primary
#   status             one line per node: primary / replica / sentinel / down
#   stop               stop every node and remove the directory
#
# Usage: deploy/dev/redis-sentinel.sh start|primary|kill-primary|failover|wait-moved|wait-replicated|freeze-replicas|thaw-replicas|start-node|status|stop
# Env: HERMES_REDIS_DIR (default /tmp/hermes-redis)
# The service takes them as redis.url =
#   redis+sentinel://127.0.0.1:26391,127.0.0.1:26392,127.0.0.1:26393/hermes
set -euo pipefail

base=${HERMES_REDIS_DIR:-/tmp/hermes-redis}
data_ports=(6391 6392 6393)
sentinel_ports=(26391 26392 26393)
master=hermes

die() { echo "redis-sentinel: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
up() { cli "$1" PING 2>/dev/null | grep -q PONG; }
pid_of() { cat "$base/$1/redis.pid" 2>/dev/null || true; }

start_data() { # start_data PORT [PRIMARY_PORT]
  local port=$1 dir="$base/$1"
  up "$port" && return 0
  mkdir -p "$dir"
  local args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log")
  [[ -n ${2:-} ]] && args+=(--replicaof 127.0.0.1 "$2")
  redis-server "${args[@]}"
}

start_sentinel() {
  local port=$1 dir="$base/$1"
  up "$port" && return 0
  mkdir -p "$dir"
  # Sentinel rewrites its own config file: write it only the first time.
  [[ -f $dir/sentinel.conf ]] || cat >"$dir/sentinel.conf" <<EOF
port $port
bind 127.0.0.1
dir $dir
sentinel monitor $master 127.0.0.1 ${data_ports[0]} 2
sentinel down-after-milliseconds $master 1000
sentinel failover-timeout $master 5000
sentinel parallel-syncs $master 2
EOF
  redis-server "$dir/sentinel.conf" --sentinel --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
}

primary() { # the port the first answering Sentinel names
  local s addr
  for s in "${sentinel_ports[@]}"; do
    addr=$(cli "$s" SENTINEL get-master-addr-by-name "$master" 2>/dev/null | tail -1) || continue
    [[ -n $addr ]] && { echo "$addr"; return 0; }
  done
  return 1
}

role() { # role PORT: primary | replica | sentinel | down
  local r; r=$(cli "$1" ROLE 2>/dev/null | head -1) || { echo down; return; }
  case $r in master) echo primary ;; slave) echo replica ;; sentinel) echo sentinel ;; *) echo down ;; esac
}

wait_healthy() {
  local deadline=$(($(now_ms) + 30000)) p
  while (($(now_ms) < deadline)); do
    p=$(primary 2>/dev/null) || p=""
    if [[ -n $p && $(role "$p") == primary ]] &&
      [[ $(cli "$p" INFO replication | tr -d '\r' | awk -F: '/^connected_slaves/ {print $2}') == 2 ]] &&
      [[ $(cli "${sentinel_ports[0]}" SENTINEL master "$master" | tr -d '\r' | awk 'f {print; exit} /^num-other-sentinels$/ {f=1}') == 2 ]]; then
      return 0
    fi
    sleep 0.1
  done
  die "the Sentinels do not agree on a primary with two replicas after 30 s"
}

cmd_start() {
  mkdir -p "$base"
  local p; p=$(primary 2>/dev/null) || p=${data_ports[0]}
  for port in "${data_ports[@]}"; do
    if [[ $port == "$p" ]]; then start_data "$port"; else start_data "$port" "$p"; fi
  done
  for port in "${sentinel_ports[@]}"; do start_sentinel "$port"; done
  wait_healthy
  echo "primary $p"
}

cmd_kill_primary() {
  local p pid; p=$(primary) || die "no Sentinel answers"
  pid=$(pid_of "$p"); [[ -n $pid ]] || die "no pid for node $p"
  kill -9 "$pid"
  echo "$p"
}

cmd_failover() {
  local p reply deadline=$(($(now_ms) + 30000))
  p=$(primary) || die "no Sentinel answers"
  # Refused (INPROG, NOGOODSLAVE) while a replica is still resyncing after an earlier change.
  until reply=$(cli "${sentinel_ports[0]}" SENTINEL failover "$master" 2>&1) && [[ $reply == OK ]]; do
    (($(now_ms) < deadline)) || die "the Sentinels refuse to fail over: $reply"
    sleep 0.2
  done
  echo "$p"
}

cmd_wait_moved() {
  local old=$1 start; start=$(now_ms)
  local deadline=$((start + 60000)) p
  while (($(now_ms) < deadline)); do
    p=$(primary 2>/dev/null) || p=""
    if [[ -n $p && $p != "$old" && $(role "$p") == primary ]]; then
      echo "$p $(($(now_ms) - start))ms"
      return 0
    fi
    sleep 0.05
  done
  die "the Sentinels still name $old after 60 s"
}

replicas() { for port in "${data_ports[@]}"; do [[ $(role "$port") == replica ]] && echo "$port"; done; return 0; }

cmd_signal_replicas() { # cmd_signal_replicas SIGNAL PORTS...
  local signal=$1 port pid; shift
  for port in "$@"; do
    pid=$(pid_of "$port"); [[ -n $pid ]] || die "no pid for node $port"
    kill "-$signal" "$pid"
    echo "$port"
  done
}

cmd_status() {
  for port in "${data_ports[@]}" "${sentinel_ports[@]}"; do echo "$port $(role "$port")"; done
}

cmd_stop() {
  for port in "${sentinel_ports[@]}" "${data_ports[@]}"; do
    local pid; pid=$(pid_of "$port")
    [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$base"
}

case ${1:-} in
  start) cmd_start ;;
  primary) primary ;;
  kill-primary) cmd_kill_primary ;;
  failover) cmd_failover ;;
  wait-moved) cmd_wait_moved "${2:?the port of the old primary}" ;;
  wait-replicated) acked=$(cli "$(primary)" WAIT 2 5000) && [[ $acked == 2 ]] || die "$acked of 2 replicas caught up in 5 s" ;;
  freeze-replicas) mapfile -t frozen < <(replicas); printf '%s\n' "${frozen[@]}" >"$base/frozen"
    cmd_signal_replicas STOP "${frozen[@]}"
    # Stopped replicas would still find what the primary sent meanwhile in their sockets:
    # close their links, so nothing more reaches them.
    cli "$(primary)" CLIENT KILL TYPE replica >/dev/null ;;
  thaw-replicas) mapfile -t frozen <"$base/frozen"; cmd_signal_replicas CONT "${frozen[@]}" ;;
  start-node) start_data "${2:?a data node port}" "$(primary || die "no Sentinel answers")" ;;
  status) cmd_status ;;
  stop) cmd_stop ;;
  *) die "usage: $0 start|primary|kill-primary|failover|wait-moved PORT|wait-replicated|freeze-replicas|thaw-replicas|start-node PORT|status|stop" ;;
esac
