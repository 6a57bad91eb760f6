#!/usr/bin/env bash
# Builds the service image from this machine's own binaries, without any registry: the
# runtime of deploy/docker/hermesd.Dockerfile (glibc, libgcc, CA certificates, uid 65532, no
# shell) assembled from the host's Debian 12 files on a `scratch` base, with hermesd and
# hermesctl stripped. Tests and machines that cannot pull use it; clusters use the Dockerfile.
#
# Usage: deploy/docker/build-local-image.sh [--bin-dir DIR] [--tag TAG] [--no-ctl]
#   --bin-dir DIR  where hermesd and hermesctl are (default: the workspace's release build)
#   --tag TAG      the image's name (default hermes-cloud:local)
#   --no-ctl       leave hermesctl out (tests that build only hermesd)
# Prints the image id on stdout.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin_dir=${CARGO_TARGET_DIR:-$repo/target}/release
tag=hermes-cloud:local
bins=(hermesd hermesctl)
die() { echo "build-local-image: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift ;;
    --tag) tag=${2:?--tag needs a name}; shift ;;
    --no-ctl) bins=(hermesd) ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) die "unknown option: $1 (try --help)" ;;
  esac
  shift
done
for b in "${bins[@]}"; do
  [[ -x $bin_dir/$b ]] || die "$bin_dir/$b not found (cargo build --release -p hermesd -p hermesctl)"
done
command -v docker >/dev/null || die "no docker client (deploy/dev/ensure-services.sh starts one)"

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/home/nonroot"
for b in "${bins[@]}"; do
  install -s -m 0755 "$bin_dir/$b" "$root/usr/local/bin/$b"
done
# The shared libraries the binaries load, at the paths the loader expects (the loader too).
ldd "${bins[@]/#/$bin_dir/}" |
  awk 'NF > 1 && $2 == "=>" && $3 ~ /^\// {print $3} NF > 1 && $1 ~ /^\// {print $1}' | sort -u |
  while read -r lib; do cp -L --parents "$lib" "$root/"; done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"
chown 65532:65532 "$root/home/nonroot" 2>/dev/null || true

version=$("$bin_dir/hermesd" --version | awk '{print $2}')
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
# Keep the ENV, ports, user and entrypoint in step with hermesd.Dockerfile.
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
LABEL org.opencontainers.image.title="hermes-cloud" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$revision" \\
      org.opencontainers.image.source="local"
ENV PATH=/usr/local/bin \\
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \\
    HERMES__HTTP__BIND=0.0.0.0:8080 \\
    HERMES__GATEWAY__BIND=0.0.0.0:8081 \\
    HERMES__OPS__BIND=0.0.0.0:9090 \\
    HERMES__TELEMETRY__LOG_FORMAT=json
EXPOSE 8080 8081 9090
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/hermesd"]
CMD ["all"]
DOCKERFILE
docker build -q -t "$tag" "$ctx" >/dev/null
# It runs, as the non-root user, with nothing but what it was given.
[[ $(docker run --rm "$tag" --version) == "hermesd $version" ]] || die "the image's hermesd does not run"
if [[ " ${bins[*]} " == *" hermesctl "* ]]; then
  [[ $(docker run --rm --entrypoint /usr/local/bin/hermesctl "$tag" --help | head -1) != "" ]] ||
    die "the image's hermesctl does not run"
fi
[[ $(docker run --rm --entrypoint /usr/local/bin/hermesd "$tag" --dump-config | grep -c '0.0.0.0:') -ge 3 ]] ||
  die "the image does not listen on every interface"
docker image inspect -f '{{.Id}}' "$tag"
