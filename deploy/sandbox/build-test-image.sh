#!/usr/bin/env bash
# Build the tiny local sandbox image hermes-sandbox:test, fully offline (no
# registry, no pulls), from Debian's static busybox plus sandboxd (the daemon the
# worker talks to) and the few shared libraries it needs. Used by tests that need
# a real container but not a real toolchain. It also carries this machine's curl, git
# and Python with requests, and Node.js from $HERMES_TEST_NODE_BIN, when there: the
# real clients of the secrets tests.
#
# sandboxd comes from $HERMES_SANDBOXD_BIN, else the workspace's debug build
# (cargo build -p hermes-sandboxd). The image is labelled with the sha256 of this
# script, common.sh and those binaries; when an image with the same label already exists
# nothing is rebuilt, so repeated runs are free.
#
# Usage: deploy/sandbox/build-test-image.sh [--force] [--verify]
#   --force   rebuild even if the image is up to date
#   --verify  run the smoke test even if nothing was rebuilt
# Prints the image id on stdout.
set -euo pipefail

IMAGE=hermes-sandbox:test
SELFTEST_VOLUME=hermes-selftest
NAME=build-test-image
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"

force=0
verify=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --verify) verify=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) die "unknown option: $arg (try --help)" ;;
  esac
done

self=$(readlink -f "${BASH_SOURCE[0]}")
sandboxd=$(find_sandboxd debug "cargo build -p hermes-sandboxd")
# The rmcp test server, which the e2e tests run as a tenant's stdio MCP server in the sandbox
# (cargo build -p hermes-testkit --bin hermes-mcp-test-server; deploy/dev/test.sh builds it
# first). Left out when it is not built (the load test's image needs only sandboxd).
mcp=${HERMES_MCP_TEST_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/hermes-mcp-test-server}
if [[ -x $mcp ]]; then mcp=$(readlink -f "$mcp"); else mcp=/dev/null; fi
# This machine's curl, for the tests of secrets swapped in at the egress proxy (a real HTTPS
# client in the sandbox); left out when the machine has none.
curl_bin=$(command -v curl || true)
if [[ -n $curl_bin ]]; then curl_bin=$(readlink -f "$curl_bin"); else curl_bin=/dev/null; fi
# Other real clients for the same tests, each told of the egress CA by its own variable: git
# with its HTTPS helper, and this machine's Python with requests (deploy/dev/test.sh installs
# it with schemathesis). Each is left out when the machine lacks it.
git_bin=/usr/bin/git
git_https=/usr/lib/git-core/git-remote-https
if [[ ! -x $git_bin || ! -x $git_https ]]; then git_bin=/dev/null git_https=/dev/null; fi
python_home=$(python3 -c 'import requests, sys; print(sys.base_prefix)' 2>/dev/null || true)
python_version=$(python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
python_bin=/dev/null
if [[ -n $python_home && -x $python_home/bin/$python_version ]]; then python_bin=$python_home/bin/$python_version; fi
# Node.js 22.21 or later from $HERMES_TEST_NODE_BIN (deploy/dev/test.sh fetches 24): older
# Node's fetch ignores the proxy variables.
node_bin=${HERMES_TEST_NODE_BIN:-/dev/null}
if [[ ! -x $node_bin ]]; then node_bin=/dev/null; fi
# Packages, chown and docker all need root: re-run the whole script via sudo.
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "must run as root (sudo not available)"
  exec sudo -- env "HERMES_SANDBOXD_BIN=$sandboxd" "HERMES_MCP_TEST_BIN=$mcp" "HERMES_TEST_NODE_BIN=$node_bin" \
    "PATH=$PATH" "$self" "$@"
fi

need_docker

recipe=$(cat "$self" "$SANDBOX_COMMON" "$sandboxd" "$mcp" "$curl_bin" "$git_bin" "$git_https" "$python_bin" "$node_bin" |
  sha256sum | cut -d' ' -f1)

smoke_test() {
  smoke_run -- sh -c 'id && echo ok > /workspace/x && cat /workspace/x && /opt/hermes/bin/hermes-sandboxd --help >/dev/null'
}

exit_if_current "$recipe" "$force" "$verify"

# Debian's plain "busybox" package is dynamically linked and would not run in
# an image without libc; busybox-static replaces it with a self-contained one.
busybox_is_static() {
  [[ -x /bin/busybox ]] || return 1
  local out
  # Capture first: ldd exits 1 on static binaries, which pipefail would see.
  if command -v file >/dev/null 2>&1; then
    out=$(LC_ALL=C file -L /bin/busybox 2>&1 || true)
  else
    out=$(LC_ALL=C ldd /bin/busybox 2>&1 || true)
  fi
  [[ $out == *"statically linked"* || $out == *"not a dynamic executable"* ]]
}
if ! busybox_is_static; then
  log "installing busybox-static"
  install_busybox() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends busybox-static >&2
  }
  # Refresh package lists once only if the first attempt fails.
  install_busybox || { apt-get update -q >&2 && install_busybox; }
  busybox_is_static || die "/bin/busybox is still not a static binary"
fi

# The programs whose shared libraries the image needs.
linked_by() {
  local bins=("$sandboxd")
  for bin in "$mcp" "$curl_bin" "$git_bin" "$git_https" "$python_bin" "$node_bin"; do
    if [[ $bin != /dev/null ]]; then bins+=("$bin"); fi
  done
  if [[ $python_bin != /dev/null ]]; then bins+=("$python_home/lib/$python_version"/lib-dynload/*.so); fi
  ldd "${bins[@]}" 2>/dev/null || true
}

# Python's interpreter, its standard library (no tests, no GUI) and requests with what it
# needs, under $1, as /usr/bin/python3. The interpreter finds its library next to itself; its
# shared libpython goes where the loader looks by default.
copy_python() {
  local dest=$1 stdlib=$python_home/lib/$python_version site
  site=$(python3 -c 'import os, requests; print(os.path.dirname(os.path.dirname(requests.__file__)))')
  install -D -m 0755 "$python_bin" "$dest/bin/python3"
  mkdir -p "$dest/lib/$python_version/site-packages"
  tar -C "$stdlib" -c --exclude=./site-packages --exclude=./test --exclude=__pycache__ --exclude=./idlelib \
    --exclude=./tkinter --exclude=./ensurepip --exclude=./lib2to3 --exclude='./config-*' . |
    tar -C "$dest/lib/$python_version" -x
  for package in requests urllib3 idna certifi charset_normalizer; do
    cp -r "$site/$package" "$dest/lib/$python_version/site-packages/"
  done
  find "$python_home/lib" -maxdepth 1 -name 'libpython*.so*' -exec cp -L {} "$root/lib/x86_64-linux-gnu/" \;
  ln -sf /opt/python/bin/python3 "$root/usr/bin/python3"
}

root=$(mktemp -d -t hermes-sandbox-test.XXXXXX)
trap 'rm -rf -- "$root"' EXIT

mkdir -p "$root"/{bin,etc,root,run,tmp,workspace,usr/bin,usr/local/bin,proc,sys,dev,opt/hermes/bin,hermes/ipc}
install -m 0755 "$sandboxd" "$root/opt/hermes/bin/hermes-sandboxd"
if [[ $mcp != /dev/null ]]; then
  # Root's and read-only to others: the MCP server user (1001) runs it, the sandbox user
  # (1000) cannot change it (sandboxd refuses servers the sandbox user could change).
  install -d -m 0755 "$root/opt/hermes/test"
  install -m 0755 "$mcp" "$root/opt/hermes/test/hermes-mcp-test-server"
fi
# The shared libraries sandboxd, the MCP test server and the clients link against (glibc from this
# machine), at the same paths, so the dynamic loader finds them.
while read -r lib; do
  [[ -f $lib ]] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done < <(linked_by | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u)
if [[ $curl_bin != /dev/null ]]; then install -m 0755 "$curl_bin" "$root/usr/bin/curl"; fi
if [[ $git_bin != /dev/null ]]; then
  install -m 0755 "$git_bin" "$root/usr/bin/git"
  install -D -m 0755 "$git_https" "$root/usr/lib/git-core/git-remote-https"
fi
if [[ $python_bin != /dev/null ]]; then copy_python "$root/opt/python"; fi
if [[ $node_bin != /dev/null ]]; then install -m 0755 "$node_bin" "$root/usr/bin/node"; fi
install -m 0755 /bin/busybox "$root/bin/busybox"
# One symlink per applet; "busybox" itself is in the list and must not
# replace the binary.
while read -r applet; do
  if [[ -n $applet && $applet != busybox ]]; then
    ln -sf busybox "$root/bin/$applet"
  fi
done < <(/bin/busybox --list)

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
sandbox:x:1000:1000::/workspace:/bin/sh
mcp:x:1001:1001::/hermes/mcp/home:/bin/false
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
sandbox:x:1000:
mcp:x:1001:
GROUP
chmod 0700 "$root/root"
chmod 1777 "$root/tmp"
chmod 0755 "$root/run"
# Docker copies this ownership into a fresh named volume mounted here, so the
# unprivileged sandbox user can write its workspace.
chown 1000:1000 "$root/workspace"

old_id=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
tar --numeric-owner -C "$root" -c . |
  docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    -c 'WORKDIR /workspace' \
    -c 'LABEL io.hermes.sandbox=test' \
    -c "LABEL io.hermes.recipe=$recipe" \
    - "$IMAGE" >/dev/null
finish_build "$old_id"
