#!/usr/bin/env bash
# Build the full local sandbox image hermes-sandbox:latest (Debian bookworm
# minbase + python3, git, curl, ...) without any container registry, for demos
# and development on a single machine. Clusters use deploy/sandbox/Dockerfile.
#
# The rootfs comes from debootstrap against the machine's own Debian mirror and
# is cached as a tarball under /var/cache/hermes-sandbox/, keyed by the sha256
# of this script, so rebuilding the image later takes seconds. sandboxd (the
# daemon the worker talks to) is added from $HERMES_SANDBOXD_BIN, else the
# workspace's release build. The image is labelled with the hash of both (and of
# common.sh, which this script sources); when it is current nothing is done at all.
#
# Usage: deploy/sandbox/build-image.sh [--variant node|data] [--force] [--refresh] [--verify] [--mirror URL]
#   --variant     also Node and npm/npx (hermes-sandbox:node: stdio MCP servers run with npx)
#                 or Python's data libraries (hermes-sandbox:data); list it in sandbox.images
#   --force       re-import the image even if it is up to date (uses the cache)
#   --refresh     re-run debootstrap even if a cached rootfs exists (picks up
#                 Debian updates); implies --force
#   --verify      run the smoke test even if nothing was rebuilt
#   --mirror URL  Debian mirror to use (default: from apt sources; also
#                 settable with HERMES_DEBIAN_MIRROR)
# Prints the image id on stdout.
set -euo pipefail

IMAGE=hermes-sandbox:latest
SUITE=bookworm
# Keep in sync with deploy/sandbox/Dockerfile.
PACKAGES=python3,ca-certificates,bash,coreutils,git,curl,procps,findutils,grep,sed,less
CACHE_DIR=/var/cache/hermes-sandbox
SELFTEST_VOLUME=hermes-selftest-full
NAME=build-image
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"

force=0
refresh=0
verify=0
mirror=${HERMES_DEBIAN_MIRROR:-}
variant=""
while (($#)); do
  case "$1" in
    --variant)
      (($# >= 2)) || die "--variant needs node or data"
      variant=$2
      shift
      ;;
    --variant=*) variant=${1#--variant=} ;;
    --force) force=1 ;;
    --refresh) refresh=1 force=1 ;;
    --verify) verify=1 ;;
    --mirror)
      (($# >= 2)) || die "--mirror needs a URL"
      mirror=$2
      shift
      ;;
    --mirror=*) mirror=${1#--mirror=} ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) die "unknown option: $1 (try --help)" ;;
  esac
  shift
done

# A variant's packages go in with apt inside the bootstrapped system: debootstrap's own
# resolver cannot configure npm's hundreds of node-* dependencies in one pass.
EXTRA=""
case "$variant" in
  "") ;;
  node) IMAGE=hermes-sandbox:node EXTRA="nodejs npm" ;;
  data) IMAGE=hermes-sandbox:data EXTRA="python3-pandas python3-numpy python3-matplotlib python3-openpyxl python3-scipy" ;;
  *) die "unknown --variant $variant (node or data)" ;;
esac

self=$(readlink -f "${BASH_SOURCE[0]}")
sandboxd=$(find_sandboxd release "cargo build --release -p hermes-sandboxd")
# debootstrap, chroot and docker all need root: re-run the whole script via sudo.
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "must run as root (sudo not available)"
  exec sudo -- env "HERMES_DEBIAN_MIRROR=$mirror" "HERMES_SANDBOXD_BIN=$sandboxd" "$self" ${variant:+"--variant=$variant"} "$@"
fi
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

need_docker

rootfs_recipe=$( (cat "$self"; echo "$PACKAGES $EXTRA") | sha256sum | cut -d' ' -f1)
recipe=$( (cat "$self" "$SANDBOX_COMMON" "$sandboxd"; echo "$PACKAGES $EXTRA") | sha256sum | cut -d' ' -f1)
flavour=${variant:-full}
cache="$CACHE_DIR/rootfs-$SUITE-$flavour-${rootfs_recipe:0:16}.tar"

smoke_test() {
  local extra=true
  case "$variant" in
    node) extra='node --version && npx --version' ;;
    data) extra='python3 -c "import pandas, numpy, matplotlib, openpyxl, scipy"' ;;
  esac
  smoke_run --tmpfs /run -- \
    bash -c "id && python3 -c 'print(\"python ok\")' && git --version &&
      curl --version | head -n 1 && echo ok > /workspace/x && cat /workspace/x &&
      /opt/hermes/bin/hermes-sandboxd --help >/dev/null && $extra"
}

exit_if_current "$recipe" "$force" "$verify"

apt_updated=0
apt_install() {
  log "installing $*"
  if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
    return 0
  fi
  # Fresh images often ship without package lists: refresh them once, retry.
  ((apt_updated)) && return 1
  apt_updated=1
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

# The mirror this machine already uses (often a local or snapshot mirror), so
# the build works wherever apt works. The security archive only carries
# updates, so it cannot bootstrap a system and is skipped.
detect_mirror() {
  local uri=""
  if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
    uri=$(awk 'tolower($1) == "uris:" {
                 for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit }
               }' /etc/apt/sources.list.d/*.sources)
  fi
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    # "deb [opts] URI suite components": skip the optional [...] block.
    uri=$(awk '$1 == "deb" {
                 i = 2
                 if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
                 if ($i !~ /security/) { print $i; exit }
               }' /etc/apt/sources.list)
  fi
  case "$uri" in
    http://* | https://* | file://*) ;;
    *) uri=http://deb.debian.org/debian ;;
  esac
  echo "${uri%/}"
}

work=""
cleanup() {
  [[ -n $work && -d $work ]] || return 0
  # A failed debootstrap can leave proc/sys mounted inside the target; never
  # rm -rf through a live mount.
  local mnt
  while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done < <(findmnt -rn -o TARGET | grep -F "$work/" | sort -r)
  rm -rf --one-file-system -- "$work"
}
trap cleanup EXIT

build_rootfs() {
  if ! command -v debootstrap >/dev/null 2>&1; then
    apt_install debootstrap
  fi
  if [[ ! -f /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
    apt_install debian-archive-keyring
  fi
  [[ -n $mirror ]] || mirror=$(detect_mirror)
  mkdir -p "$CACHE_DIR"
  # /var/tmp rather than /tmp: the rootfs is a few hundred MB and /tmp may be
  # a small tmpfs, or mounted nodev/noexec which debootstrap cannot use.
  work=$(mktemp -d -p /var/tmp hermes-sandbox.XXXXXX)
  local root="$work/rootfs" dlog="$CACHE_DIR/debootstrap.log"
  log "debootstrap $SUITE from $mirror (log: $dlog)"
  if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$mirror" >"$dlog" 2>&1; then
    tail -n 20 "$dlog" >&2
    die "debootstrap failed; see $dlog"
  fi
  if [[ -n $EXTRA ]]; then
    log "installing $EXTRA"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mount -t proc proc "$root/proc"
    # shellcheck disable=SC2086 # EXTRA is a list of package names
    if ! chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $EXTRA >>"$dlog" 2>&1; then
      tail -n 20 "$dlog" >&2
      die "installing $EXTRA failed; see $dlog"
    fi
    umount "$root/proc"
  fi

  # Unprivileged user the worker runs as (-u 1000:1000); its home is the
  # workspace volume. Docker copies /workspace's ownership into a fresh named
  # volume, which is what makes the volume writable for uid 1000.
  chroot "$root" groupadd -g 1000 sandbox
  chroot "$root" useradd -u 1000 -g 1000 -d /workspace -M -s /bin/bash sandbox
  # The user stdio MCP servers run as (sandboxd --mcp-as): another uid, so the sandbox user
  # can neither read their secrets nor change their code; sandboxd makes its home.
  chroot "$root" groupadd -g 1001 mcp
  chroot "$root" useradd -u 1001 -g 1001 -d /hermes/mcp/home -M -s /usr/sbin/nologin mcp
  install -d -o 1000 -g 1000 -m 0755 "$root/workspace"

  # Trim what a sandbox never needs: package caches and lists (uid 1000 cannot
  # use apt anyway) and the host's resolver/hostname, which docker supplies.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
    "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root/etc/resolv.conf" "$root/etc/hostname"
  # Sandboxes run with no-new-privileges; dropping setuid/setgid bits as well
  # means a misconfigured run still has no way up to root.
  find "$root" -xdev -type f -perm /6000 -exec chmod ug-s {} +

  # Write the cache atomically and drop tarballs of older recipes.
  tar --numeric-owner -C "$root" -cf "$cache.tmp" .
  mv -f "$cache.tmp" "$cache"
  find "$CACHE_DIR" -maxdepth 1 -name "rootfs-$SUITE-$flavour-*.tar" ! -path "$cache" -delete
  cleanup
  work=""
}

if ((refresh)) || [[ ! -s $cache ]]; then
  build_rootfs
else
  log "using cached rootfs $cache"
fi

old_id=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
docker import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  -c 'WORKDIR /workspace' \
  -c "LABEL io.hermes.sandbox=$flavour" \
  "$cache" "$IMAGE-base" >/dev/null
# Add sandboxd (and the socket mount point) on top of the cached rootfs.
stage=$(mktemp -d -t hermes-sandboxd.XXXXXX)
install -D -m 0755 "$sandboxd" "$stage/opt/hermes/bin/hermes-sandboxd"
mkdir -p "$stage/hermes/ipc"
cid=$(docker create "$IMAGE-base" /bin/true)
docker cp "$stage/opt" "$cid:/" && docker cp "$stage/hermes" "$cid:/"
docker commit -c "LABEL io.hermes.recipe=$recipe" -c 'CMD ["bash"]' "$cid" "$IMAGE" >/dev/null
docker rm -f "$cid" >/dev/null
rm -rf -- "$stage"
docker image rm "$IMAGE-base" >/dev/null 2>&1 || true
finish_build "$old_id"
