#!/usr/bin/env bash
# Make sure the local services Hermes Cloud needs for development and tests are up:
#   PostgreSQL 127.0.0.1:5432 (trust auth, role "postgres"), Redis 127.0.0.1:6379,
#   RabbitMQ 127.0.0.1:5672 (guest/guest), bubblewrap (the local sandbox backend) and a
#   Docker engine.
# Each service is probed first; only a service that does not answer is installed
# (when its binary is missing) and started. Safe to run any number of times.
# Prints one line per service: "<name>: running" or "<name>: started".
#
# Usage: deploy/dev/ensure-services.sh [--no-docker]
set -euo pipefail

usage() {
  echo "usage: $0 [--no-docker]" >&2
}

die() {
  echo "ensure-services: $*" >&2
  exit 1
}

with_docker=1
for arg in "$@"; do
  case "$arg" in
    --no-docker) with_docker=0 ;;
    -h | --help) usage; exit 0 ;;
    *) usage; exit 2 ;;
  esac
done

# Probes work as any user; installing and starting daemons needs root, so
# those steps go through sudo when we are not root. Without sudo we only fail
# once something actually has to be installed or started.
as_root() {
  if [[ $EUID -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root to run: $* (not root, and sudo is not available)"
  fi
}

# The daemons live in sbin, which is not on every user's PATH.
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

apt_updated=0
apt_install() {
  echo "ensure-services: installing $*" >&2
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
    return 0
  fi
  # Fresh images often ship without package lists: refresh them once, retry.
  ((apt_updated)) && return 1
  apt_updated=1
  as_root apt-get update -q >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

# wait_for NAME TIMEOUT LOG PROBE... : poll PROBE once a second until it succeeds.
wait_for() {
  local name=$1 timeout=$2 log=$3
  shift 3
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$name did not answer within ${timeout}s; see $log"
    sleep 1
  done
}

# ---------------------------------------------------------------- PostgreSQL

pg_version() {
  # Newest installed cluster version (ls /etc/postgresql may list several).
  { find /etc/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null || true; } | sort -V | tail -n 1
}

probe_postgres() {
  command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432 -t 3
}

postgres_login_ok() {
  psql -w -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1
}

# A fresh Debian cluster uses scram on 127.0.0.1; the dev setup wants trust for
# loopback TCP. pg_hba is first-match, so our lines go at the top.
ensure_postgres_trust() {
  postgres_login_ok && return 0
  local ver hba marker='# hermes-dev: trust loopback TCP'
  ver=$(pg_version)
  hba="/etc/postgresql/$ver/main/pg_hba.conf"
  as_root test -f "$hba" || die "postgres: cannot log in as postgres and $hba is missing"
  if ! as_root grep -qF "$marker" "$hba"; then
    echo "ensure-services: postgres: adding loopback trust rules to $hba" >&2
    as_root sed -i "1i $marker (added by deploy/dev/ensure-services.sh)\\
host all all 127.0.0.1/32 trust\\
host all all ::1/128 trust" "$hba"
    as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main reload
  fi
  wait_for postgres 10 "$hba" postgres_login_ok
}

ensure_postgres() {
  if probe_postgres; then
    ensure_postgres_trust
    echo "postgres: running"
    return 0
  fi
  if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || ! command -v pg_ctlcluster >/dev/null 2>&1; then
    apt_install postgresql
  fi
  local ver
  ver=$(pg_version)
  if [[ -z $ver || ! -d /etc/postgresql/$ver/main ]]; then
    # The package normally creates "main"; recreate it if it was removed.
    ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -V | tail -n 1)
    as_root pg_createcluster "$ver" main >&2
  fi
  # /run is often a fresh tmpfs without the socket directory.
  as_root install -d -o postgres -g postgres -m 2775 /var/run/postgresql
  # The package's postinst may already have started it; only start if still down.
  if ! probe_postgres; then
    as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || true
  fi
  wait_for postgres 30 "/var/log/postgresql/postgresql-$ver-main.log" probe_postgres
  ensure_postgres_trust
  echo "postgres: started"
}

# --------------------------------------------------------------------- Redis

probe_redis() {
  command -v redis-cli >/dev/null 2>&1 &&
    [[ $(timeout 5 redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null) == PONG ]]
}

ensure_redis() {
  if probe_redis; then
    echo "redis: running"
    return 0
  fi
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    apt_install redis-server
  fi
  if ! probe_redis; then
    as_root mkdir -p /var/lib/redis /var/log/redis
    # Ephemeral dev instance: no RDB/AOF persistence, loopback only.
    as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 \
      --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log >&2
  fi
  wait_for redis 15 /var/log/redis/ci.log probe_redis
  echo "redis: started"
}

# ------------------------------------------------------------------ RabbitMQ

probe_rabbitmq() {
  # A bare TCP connect to the AMQP port: no Erlang VM boot, so it is instant.
  timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5672' 2>/dev/null
}

ensure_rabbitmq() {
  if probe_rabbitmq; then
    echo "rabbitmq: running"
    return 0
  fi
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    apt_install rabbitmq-server
  fi
  if ! probe_rabbitmq; then
    # Fails harmlessly with "already running" if the node is still booting.
    as_root rabbitmq-server -detached >&2 || true
  fi
  wait_for rabbitmq 60 /var/log/rabbitmq/ probe_rabbitmq
  echo "rabbitmq: started"
}

# -------------------------------------------------------------------- Docker

probe_docker() {
  command -v docker >/dev/null 2>&1 || return 1
  # As root this is one call; otherwise fall back to sudo when the user is not
  # in the docker group.
  timeout 20 docker info >/dev/null 2>&1 ||
    { [[ $EUID -ne 0 ]] && command -v sudo >/dev/null 2>&1 && timeout 20 sudo docker info >/dev/null 2>&1; }
}

ensure_docker() {
  if probe_docker; then
    echo "docker: running"
    return 0
  fi
  # An engine that is up but whose socket we may not use must not be started twice.
  local out=""
  if [[ $EUID -ne 0 ]] && command -v docker >/dev/null 2>&1; then
    out=$(timeout 20 docker info 2>&1 || true)
  fi
  if [[ ${out,,} == *"permission denied"* ]]; then
    die "docker: engine is running but $(id -un) may not use its socket (join the docker group or use sudo)"
  fi
  # A docker client (e.g. /usr/local/bin/docker) may exist without an engine,
  # so look for the daemon binary itself.
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    apt_install docker.io
  fi
  if ! probe_docker; then
    # setsid+nohup so the daemon outlives this script and its terminal.
    as_root sh -c 'nohup setsid dockerd >>/var/log/hermes-dockerd.log 2>&1 </dev/null &'
  fi
  wait_for docker 60 /var/log/hermes-dockerd.log probe_docker
  echo "docker: started"
}

# The local sandbox backend runs sandboxes with bubblewrap (and prlimit, from util-linux).
ensure_bubblewrap() {
  if command -v bwrap >/dev/null 2>&1; then
    echo "bubblewrap: present"
    return
  fi
  apt_install bubblewrap
  command -v bwrap >/dev/null 2>&1 || die "bubblewrap: bwrap still missing after installing it"
  echo "bubblewrap: installed"
}

ensure_postgres
ensure_redis
ensure_rabbitmq
ensure_bubblewrap
if ((with_docker)); then
  ensure_docker
fi
