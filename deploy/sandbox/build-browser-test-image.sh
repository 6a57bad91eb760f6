#!/usr/bin/env bash
# Build hermes-sandbox:browser-test, the test sandbox image with a browser in it: the
# hermes-sandbox:test image (build-test-image.sh, built first if missing) plus this
# machine's Debian Chromium (/usr/lib/chromium, `apt-get install chromium`), the shared
# libraries it links and loads (NSS), and fonts. Fully offline: `docker build` from the
# local base image, nothing pulled. Labelled with the sha256 of this script, the base image
# and the Chromium binary; an up-to-date image is not rebuilt.
#
# Production images install Chromium from their distribution instead (deploy/sandbox/Dockerfile
# with the `browser` target); this one exists so the browser tests need no registry.
#
# Usage: deploy/sandbox/build-browser-test-image.sh [--force]
# Prints the image id on stdout.
set -euo pipefail

IMAGE=hermes-sandbox:browser-test
BASE=hermes-sandbox:test

die() {
  echo "build-browser-test-image: $*" >&2
  exit 1
}

force=0
[[ ${1:-} == --force ]] && force=1
self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "must run as root (sudo not available)"
  exec sudo -- env "HERMES_SANDBOXD_BIN=${HERMES_SANDBOXD_BIN:-}" "CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-}" "$self" "$@"
fi
chromium=/usr/lib/chromium/chromium
if [[ ! -x $chromium ]]; then
  echo "build-browser-test-image: installing chromium" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >&2 ||
    { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >&2; }
fi
[[ -x $chromium ]] || die "no Chromium at $chromium"
"$here/build-test-image.sh" >/dev/null
base_id=$(docker image inspect -f '{{.Id}}' "$BASE")
recipe=$(cat "$self" "$chromium" | sha256sum | cut -d' ' -f1)-${base_id#sha256:}
current=$(docker image inspect -f '{{index .Config.Labels "io.hermes.recipe"}}' "$IMAGE" 2>/dev/null || true)
if ((!force)) && [[ $current == "$recipe" ]]; then
  echo "build-browser-test-image: $IMAGE is up to date" >&2
  docker image inspect -f '{{.Id}}' "$IMAGE"
  exit 0
fi

ctx=$(mktemp -d -t hermes-browser-image.XXXXXX)
trap 'rm -rf -- "$ctx"' EXIT
mkdir -p "$ctx/root/usr/lib/chromium/locales" "$ctx/root/usr/local/bin"
# The browser without its Vulkan validation layers and mock driver (test-only, 100+ MB).
for f in /usr/lib/chromium/*; do
  case $(basename "$f") in
    libVkLayer_khronos_validation* | libVkICD_mock_icd* | locales) ;;
    *) cp -a "$f" "$ctx/root/usr/lib/chromium/" ;;
  esac
done
cp -a /usr/lib/chromium/locales/en-US.pak "$ctx/root/usr/lib/chromium/locales/"
ln -s /usr/lib/chromium/chromium "$ctx/root/usr/local/bin/chromium"
# Every library the browser and its own libraries link, plus what NSS loads at run time.
copy_lib() {
  [[ -e $1 ]] || return 0
  mkdir -p "$ctx/root$(dirname "$1")"
  cp -L "$1" "$ctx/root$1"
}
while read -r lib; do
  copy_lib "$lib"
done < <(for bin in "$chromium" /usr/lib/chromium/*.so; do ldd "$bin" 2>/dev/null; done |
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u)
multiarch=$(dirname "$(ldd "$chromium" | awk '/libnss3/ { print $3 }')")
for lib in "$multiarch"/nss/* "$multiarch"/libsoftokn3.so "$multiarch"/libfreeblpriv3.so "$multiarch"/libnssckbi.so; do
  copy_lib "$lib"
done
# Fonts, so pages render text (screenshots, layout).
mkdir -p "$ctx/root/etc" "$ctx/root/usr/share"
cp -a /etc/fonts "$ctx/root/etc/" 2>/dev/null || true
cp -a /usr/share/fonts "$ctx/root/usr/share/" 2>/dev/null || true

cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE
COPY root/ /
LABEL io.hermes.sandbox=browser-test io.hermes.recipe=$recipe
DOCKERFILE
old_id=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$ctx" >/dev/null
new_id=$(docker image inspect -f '{{.Id}}' "$IMAGE")
if [[ -n $old_id && $old_id != "$new_id" ]]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
# Smoke test: under the sandbox's restrictions the browser starts and renders a page.
rendered=$(docker run --rm --cap-drop ALL --security-opt no-new-privileges --read-only --tmpfs /tmp --network none \
  -u 1000:1000 "$IMAGE" chromium --headless=new --no-sandbox --disable-gpu --user-data-dir=/tmp/smoke \
  --dump-dom 'data:text/html,<p>rendered</p>' 2>/dev/null) || true
[[ $rendered == *"<p>rendered</p>"* ]] || die "chromium does not render a page in $IMAGE"
echo "$new_id"
