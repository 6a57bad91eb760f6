# shellcheck shell=bash
# What the sandbox image scripts share (build-image.sh and build-test-image.sh source it):
# messages, finding sandboxd, checking Docker, the up-to-date check, the smoke test's sandbox
# and the end of a build. The sourcing script sets NAME (the prefix of its messages), IMAGE and
# SELFTEST_VOLUME first, and defines smoke_test. Each image's recipe hashes this file too
# ($SANDBOX_COMMON), so a change here rebuilds the images.

SANDBOX_COMMON=$(readlink -f "${BASH_SOURCE[0]}")
repo=$(cd "$(dirname "$SANDBOX_COMMON")/../.." && pwd)

die() {
  echo "$NAME: $*" >&2
  exit 1
}
log() {
  echo "$NAME: $*" >&2
}

# The sandboxd to put in the image, resolved: $HERMES_SANDBOXD_BIN, else the workspace's build
# of that profile (debug or release); `build` is the command that makes it.
find_sandboxd() {
  local profile=$1 build=$2 bin
  bin=${HERMES_SANDBOXD_BIN:-${CARGO_TARGET_DIR:-$repo/target}/$profile/hermes-sandboxd}
  [[ -x $bin ]] || die "sandboxd not found at $bin (run: $build)"
  readlink -f "$bin"
}

need_docker() {
  command -v docker >/dev/null 2>&1 || die "docker client not found (run deploy/dev/ensure-services.sh)"
  docker info >/dev/null 2>&1 || die "docker engine not answering (run deploy/dev/ensure-services.sh)"
}

# When $IMAGE was built from `recipe` already and `force` is 0, nothing is built: print its id
# and exit, after the smoke test when `verify` is 1.
exit_if_current() {
  local recipe=$1 force=$2 verify=$3 current
  current=$(docker image inspect -f '{{index .Config.Labels "io.hermes.recipe"}}' "$IMAGE" 2>/dev/null || true)
  if ((!force)) && [[ $current == "$recipe" ]]; then
    log "$IMAGE is up to date"
    if ((verify)); then
      smoke_test
    fi
    docker image inspect -f '{{.Id}}' "$IMAGE"
    exit 0
  fi
}

# Runs a command in $IMAGE under the restrictions the worker applies to real sandboxes, with a
# fresh $SELFTEST_VOLUME as its workspace, and dies unless it succeeds. Arguments before `--`
# are more `docker run` options; the rest is the command.
smoke_run() {
  local opts=() rc=0
  while (($#)) && [[ $1 != -- ]]; do
    opts+=("$1")
    shift
  done
  shift
  docker volume rm -f "$SELFTEST_VOLUME" >/dev/null 2>&1 || true
  docker run --rm --cap-drop ALL --security-opt no-new-privileges --read-only \
    --tmpfs /tmp "${opts[@]}" --pids-limit 256 --network none -u 1000:1000 \
    -v "$SELFTEST_VOLUME":/workspace "$IMAGE" "$@" >&2 || rc=$?
  docker volume rm -f "$SELFTEST_VOLUME" >/dev/null 2>&1 || true
  ((rc == 0)) || die "smoke test of $IMAGE failed (exit $rc)"
}

# The end of a build: drop the image $IMAGE replaced (`old_id`) so rebuilds do not pile up
# dangling layers (this fails harmlessly if a container or another tag still uses it), run the
# smoke test and print the new image's id.
finish_build() {
  local old_id=$1 new_id
  new_id=$(docker image inspect -f '{{.Id}}' "$IMAGE")
  if [[ -n $old_id && $old_id != "$new_id" ]]; then
    docker image rm "$old_id" >/dev/null 2>&1 || true
  fi
  smoke_test
  echo "$new_id"
}
