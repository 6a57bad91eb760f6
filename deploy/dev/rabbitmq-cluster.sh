#!/usr/bin/env bash
# A real 3-node RabbitMQ cluster on this machine (separate Erlang VMs), for failover tests.
# Nodes hermes-rmq1..3@localhost: AMQP 127.0.0.1:5701..5703 (guest/guest, loopback only),
# Erlang distribution 127.0.0.1:25701..25703, no plugins (so no management or prometheus
# listeners); data, logs and an Erlang cookie of their own under $HERMES_RMQ_DIR
# (default /tmp/hermes-rmq). The system node on 5672 and its cookie are not touched.
#
# Usage: deploy/dev/rabbitmq-cluster.sh CMD
#   start         start the nodes that are not running (a new cluster: 2 and 3 join 1);
#                 waits until cluster_status shows 3 running nodes; prints the time taken
#   stop          stop all three nodes and remove $HERMES_RMQ_DIR
#   status        each node's state and the running members each live node sees
#   kill N        SIGKILL node N's Erlang VM (beam.smp)
#   start-node N  start node N again; waits until it is running and back in the cluster
#                 (after all three went down use start: a node waits at boot for its peers)
#   leader QUEUE  print the number (1-3) of the node leading quorum queue QUEUE on vhost /
#   node-of NAME  print the number (1-3) of the node holding the connection a client named NAME
set -euo pipefail

BASE=${HERMES_RMQ_DIR:-/tmp/hermes-rmq}
SBIN=/usr/lib/rabbitmq/bin # the real scripts: /usr/sbin's wrappers su to the rabbitmq user
PREFIX=hermes-rmq
TIMEOUT=${HERMES_RMQ_TIMEOUT:-120}

die() { echo "rabbitmq-cluster: $*" >&2; exit 1; }
name() { echo "$PREFIX$1@localhost"; }
ndir() { echo "$BASE/n$1"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }'; }
check_n() { [[ ${1:-} =~ ^[123]$ ]] || die "node number must be 1, 2 or 3 (got '${1:-}')"; }
# The CLI finds our cookie through HOME; our env file keeps /etc/rabbitmq's out.
ctl() {
  local n=$1; shift
  HOME="$BASE/home" RABBITMQ_CONF_ENV_FILE="$BASE/rabbitmq-env.conf" \
    "$SBIN/rabbitmqctl" -n "$(name "$n")" -q "$@"
}

# pid of node N's beam.smp: the pid file the node writes, else a scan of beam.smp
# processes; either way checked against the process's own environment.
beam_pid() {
  local d pid; d=$(ndir "$1")
  for pid in $(cat "$d/pid" 2>/dev/null) $(pgrep -x beam.smp); do
    tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "RABBITMQ_PID_FILE=$d/pid" \
      && { echo "$pid"; return 0; }
  done
  return 1
}

members() { # running cluster members as node $1 sees them, as digits: "123", "13", ...
  ctl "$1" cluster_status --formatter json 2>/dev/null \
    | sed -n 's/.*"running_nodes":\[\([^]]*\)\].*/\1/p' | grep -o "$PREFIX[123]@" \
    | tr -dc 123 | fold -w1 | sort | tr -d '\n' || true
}
alive() { local n s=; for n in 1 2 3; do beam_pid "$n" >/dev/null && s+=$n; done; echo "$s"; }

# $BASE/plugins: links to rabbit and the apps it needs, and no other plugin: the node
# scans every app in its plugins dir at boot, and this saves ~20% of a boot's CPU time.
link_apps() {
  local todo=(rabbit) app dir dep
  mkdir -p "$BASE/plugins"
  while ((${#todo[@]})); do
    app=${todo[0]}; todo=("${todo[@]:1}")
    dir=$(compgen -G "$(dirname "$(readlink -f "$SBIN/rabbitmq-server")")/../plugins/$app-[0-9]*") \
      || continue # an OTP app, not shipped in the plugins dir
    [[ -e $BASE/plugins/${dir##*/} ]] && continue
    ln -s "$dir" "$BASE/plugins/"
    for dep in $(tr -d ' \t\n' <"$dir/ebin/$app.app" | grep -o '{applications,\[[^]]*' | cut -d[ -f2 \
      | tr , ' '); do todo+=("$dep"); done
  done
}

init_base() {
  [[ -d $BASE && ! -f $BASE/.hermes-rmq ]] && die "$BASE exists but was not made by this script"
  mkdir -p "$BASE/home"
  touch "$BASE/.hermes-rmq" "$BASE/rabbitmq-env.conf"
  [[ -f $BASE/enabled_plugins ]] || echo '[].' >"$BASE/enabled_plugins"
  [[ -d $BASE/plugins ]] || link_apps
  if [[ ! -f $BASE/home/.erlang.cookie ]]; then
    (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -dc 0-9a-f >"$BASE/home/.erlang.cookie")
    chmod 400 "$BASE/home/.erlang.cookie"
  fi
}

# Start node N in the background (its data dir decides whether it is new or a restart).
launch() {
  local n=$1 d; d=$(ndir "$1")
  mkdir -p "$d"
  rm -f "$d/pid" # wait_up reads only what the log gains from here on:
  stat -c %s "$d/log/$(name "$n").log" 2>/dev/null >"$d/log-offset" || echo 0 >"$d/log-offset"
  printf '%s\n' "listeners.tcp.default = 127.0.0.1:$((5700 + n))" \
    'loopback_users.guest = true' >"$d/rabbitmq.conf"
  # A new node 2 or 3 joins node 1 as it boots.
  ((n == 1)) || printf '%s\n' 'cluster_formation.peer_discovery_backend = classic_config' \
    "cluster_formation.classic_config.nodes.1 = $(name 1)" \
    'cluster_formation.discovery_retry_interval = 200' \
    "cluster_formation.discovery_retry_limit = $((TIMEOUT * 5))" >>"$d/rabbitmq.conf"
  (
    cd "$d"
    export HOME="$BASE/home" RABBITMQ_CONF_ENV_FILE="$BASE/rabbitmq-env.conf" \
      RABBITMQ_NODENAME="$(name "$n")" RABBITMQ_DIST_PORT=$((25700 + n)) \
      RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" RABBITMQ_MNESIA_BASE="$d/mnesia" \
      RABBITMQ_LOG_BASE="$d/log" RABBITMQ_PID_FILE="$d/pid" \
      RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins" RABBITMQ_PLUGINS_DIR="$BASE/plugins" \
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
    exec setsid "$SBIN/rabbitmq-server"
  ) >>"$d/console.log" 2>&1 </dev/null &
}

# Wait until node N's log, past where it stood at launch, says the broker has booted.
# (The log, not rabbitmqctl: each CLI call costs ~0.6 CPU-seconds, which slows the boot.)
wait_up() {
  local n=$1 d log from end=$((SECONDS + TIMEOUT))
  d=$(ndir "$n"); log="$d/log/$(name "$n").log"; from=$(cat "$d/log-offset")
  until tail -c +"$((from + 1))" "$log" 2>/dev/null | grep -q 'Server startup complete'; do
    if grep -q 'BOOT FAILED' "$d/console.log" || ((SECONDS >= end)); then
      tail -20 "$d/console.log" >&2; die "node $n did not come up (see $d/log)"
    fi
    sleep 0.1
  done
}

wait_members() { # until node $1 sees exactly the members $2 running
  local end=$((SECONDS + TIMEOUT))
  until [[ $(members "$1") == "$2" ]]; do
    ((SECONDS < end)) || die "node $1 sees running members '$(members "$1")', wanted '$2'"
    sleep 0.2
  done
}

# Bring up the given nodes and wait until node 1 sees all 3 running (new nodes 2 and 3
# join node 1 by peer discovery as they boot). A new node 1 boots first: a node joining
# it mid-boot can copy its database before node 1 has migrated it (BOOT FAILED:
# schema_integrity_check_failed). Nodes with data boot together (each waits at boot
# for the peers that were running when it went down).
bring_up() {
  local n rest=()
  for n in "$@"; do
    if [[ $n == 1 && ! -d $(ndir 1)/mnesia ]]; then launch 1; wait_up 1; else rest+=("$n"); fi
  done
  for n in "${rest[@]}"; do launch "$n"; done
  for n in "${rest[@]}"; do wait_up "$n"; done
  wait_members 1 123
}

cmd_start() {
  local t0=$EPOCHREALTIME down="" n
  init_base
  for n in 1 2 3; do beam_pid "$n" >/dev/null || down+=" $n"; done
  if [[ -z $down && $(members 1) == 123 ]]; then
    echo "already running: 3 nodes on 127.0.0.1:5701-5703 (dir $BASE)"; return
  fi
  # shellcheck disable=SC2086 # word splitting of the node list is wanted
  bring_up $down
  echo "cluster up: $(name 1) $(name 2) $(name 3), AMQP 127.0.0.1:5701-5703, in $(since "$t0")"
}

cmd_stop() {
  local n pid pids=() end=$((SECONDS + 15))
  [[ -d $BASE ]] || { echo "not running ($BASE does not exist)"; return; }
  [[ -f $BASE/.hermes-rmq ]] || die "$BASE was not made by this script; not removing it"
  for n in 1 2 3; do pid=$(beam_pid "$n") && { kill -TERM "$pid"; pids+=("$pid"); }; done
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      ((SECONDS < end)) || { kill -KILL "$pid"; sleep 0.2; }
      sleep 0.1
    done
  done
  rm -rf "$BASE"
  echo "stopped ${#pids[@]} node(s) and removed $BASE"
}

cmd_kill() {
  local pid
  check_n "${1:-}"
  pid=$(beam_pid "$1") || die "node $1 is not running"
  kill -KILL "$pid"
  while [[ -e /proc/$pid ]]; do sleep 0.05; done
  echo "killed node $1 ($(name "$1"), beam pid $pid)"
}

cmd_start_node() {
  local t0=$EPOCHREALTIME n=${1:-} want
  check_n "$n"
  [[ -f $BASE/.hermes-rmq ]] || die "no cluster in $BASE; run start first"
  beam_pid "$n" >/dev/null && { echo "node $n is already running"; return; }
  if [[ -d $(ndir "$n")/mnesia ]]; then
    launch "$n"; wait_up "$n"
    want=$(alive); wait_members "$n" "$want"
  else
    bring_up "$n"; want=123
  fi
  echo "node $n running, cluster members running: $want, in $(since "$t0")"
}

cmd_leader() {
  local q=${1:-} n leader=""
  [[ -n $q ]] || die "usage: $0 leader QUEUE"
  for n in $(alive | fold -w1); do
    leader=$(ctl "$n" list_queues -p / name leader --no-table-headers 2>/dev/null \
      | awk -F'\t' -v q="$q" '$1 == q { print $2 }') && break
  done
  [[ $leader =~ ^$PREFIX([123])@ ]] || die "no leader found for quorum queue '$q'"
  echo "${BASH_REMATCH[1]}"
}

cmd_node_of() {
  local who=${1:-} n
  [[ -n $who ]] || die "usage: $0 node-of CONNECTION_NAME"
  for n in $(alive | fold -w1); do
    ctl "$n" list_connections client_properties --no-table-headers 2>/dev/null \
      | grep -qF "{\"connection_name\",\"$who\"}" && { echo "$n"; return; }
  done
  die "no node holds a connection named '$who'"
}

cmd_status() {
  local n pid m best=""
  [[ -f $BASE/.hermes-rmq ]] || { echo "no cluster ($BASE does not exist)"; return; }
  for n in 1 2 3; do
    if pid=$(beam_pid "$n"); then
      m=$(members "$n"); [[ ${#m} -gt ${#best} ]] && best=$m
      echo "node $n $(name "$n") amqp 127.0.0.1:$((5700 + n)) pid $pid: up, sees running [${m:-?}]"
    else
      echo "node $n $(name "$n") amqp 127.0.0.1:$((5700 + n)): down"
    fi
  done
  echo "majority: $( ((${#best} >= 2)) && echo yes || echo NO) (${#best} of 3 running)"
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill) cmd_kill "${2:-}" ;;
  start-node) cmd_start_node "${2:-}" ;;
  leader) cmd_leader "${2:-}" ;;
  node-of) cmd_node_of "${2:-}" ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
