#!/usr/bin/env bash
# Builds the previous release's hermesd, to run beside this build's during a rolling-upgrade
# experiment: the old pods keep serving while this build's migrations run and its pods start.
# The commit is checked out in its own git worktree under /tmp and built into this build's
# target directory when CARGO_TARGET_DIR names one (the dependencies are mostly the same
# versions, so only the workspace's own crates compile: minutes, not tens), else into a
# target directory of its own. This checkout is not touched. Prints the
# path of the binary (a copy named after the commit, so a later build of another commit does
# not replace it).
#
# The default commit is e8b0e4d, the last commit of issue 36, before the high-availability
# work of issue 37 began. There are no release tags; its newest migration is 0059, which is
# what PREVIOUS_RELEASE_SCHEMA (libs/store/src/migrations.rs) says the previous release
# carries, so the binary is the build the store's rolling-upgrade check reasons about. (The
# commit before 4433485 would be a release with 0057 but not 0059: the one the upgrade stop
# of 0059 is about.) The script warns when the commit's newest migration differs from
# PREVIOUS_RELEASE_SCHEMA.
#
# A build from an empty target directory compiles every dependency too: on 2 cores, tens of
# minutes. It runs under nice.
#
# Usage: deploy/dev/rolling-upgrade.sh [--dry-run] [COMMIT]
#   --dry-run  resolve the commit, check its schema and print what would run; build nothing
# Env: HERMES_PREV_TARGET (default $CARGO_TARGET_DIR, else /var/cache/hermes-prev-target):
#      the cargo target directory
#      HERMES_PREV_WORKTREE (default /tmp/hermes-prev-<commit>): where the commit is checked out
set -euo pipefail

readonly PINNED=e8b0e4de8f8f05e18273bf0dc23b06f6327014ea

die() { echo "rolling-upgrade: $*" >&2; exit 1; }

dry_run=0
if [[ ${1:-} == --dry-run ]]; then
  dry_run=1
  shift
fi
[[ $# -le 1 ]] || die "usage: $0 [--dry-run] [COMMIT]"

root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
commit=$(git -C "$root" rev-parse --verify --quiet "${1:-$PINNED}^{commit}") \
  || die "no such commit: ${1:-$PINNED}"
short=${commit:0:12}
target=${HERMES_PREV_TARGET:-${CARGO_TARGET_DIR:-/var/cache/hermes-prev-target}}
worktree=$(realpath -m "${HERMES_PREV_WORKTREE:-/tmp/hermes-prev-$short}")

# The newest migration of a tree: the number of the last migrations/NNNN_*.sql, without zeros.
newest_in_commit=$(git -C "$root" ls-tree --name-only "$commit" migrations/ \
  | sed -n 's|^migrations/\([0-9]\{4\}\)_.*\.sql$|\1|p' | sort | tail -n 1)
[[ -n $newest_in_commit ]] || die "$short has no migrations/NNNN_*.sql"
newest_in_commit=$((10#$newest_in_commit))
previous=$(sed -n 's/^pub const PREVIOUS_RELEASE_SCHEMA: i64 = \([0-9]*\);$/\1/p' \
  "$root/libs/store/src/migrations.rs")
if [[ -z $previous ]]; then
  echo "rolling-upgrade: warning: PREVIOUS_RELEASE_SCHEMA not found in libs/store/src/migrations.rs" >&2
elif [[ $newest_in_commit != "$previous" ]]; then
  echo "rolling-upgrade: warning: $short's newest migration is $newest_in_commit, but" \
    "PREVIOUS_RELEASE_SCHEMA is $previous: the store's check reasons about another release" >&2
fi

binary="$target/hermesd-$short"
echo "rolling-upgrade: $short (newest migration $newest_in_commit) in $worktree, target $target" >&2
if [[ $dry_run == 1 ]]; then
  echo "rolling-upgrade: would run: git worktree add --detach $worktree $short;" \
    "(cd $worktree && CARGO_TARGET_DIR=$target nice -n 19 cargo build --locked -p hermesd --bin hermesd)" >&2
  echo "$binary"
  exit 0
fi

# A worktree of a clone that is gone (a CI checkout removed since) can be neither reused nor
# replaced by git: make it afresh.
if [[ -f $worktree/.git ]]; then
  gitdir=$(sed -n 's/^gitdir: //p' "$worktree/.git")
  if [[ -n $gitdir && ! -d $gitdir ]]; then
    echo "rolling-upgrade: $worktree belongs to a repository that is gone; making it again" >&2
    rm -rf "$worktree"
  fi
fi
# Reuse the worktree of an earlier run; put it at the commit whatever it held.
if [[ $(git -C "$worktree" rev-parse --show-toplevel 2>/dev/null) == "$worktree" ]]; then
  git -C "$worktree" checkout --quiet --detach "$commit"
else
  [[ ! -e $worktree ]] || die "$worktree exists and is not a git worktree: remove it or set HERMES_PREV_WORKTREE"
  git -C "$root" worktree add --quiet --detach "$worktree" "$commit"
fi

mkdir -p "$target"
# The same holds the other way: a worktree reused from an earlier run keeps its old mtimes,
# older than what this checkout's last build wrote under the same names, so the generated
# sandbox protocol of this checkout would pass as the previous release's. Touched, the
# previous release's crates and build scripts are built from its own sources.
if [[ $target == "${CARGO_TARGET_DIR:-}" ]]; then
  git -C "$worktree" ls-files -z -- libs services tests loadtest migrations skills | (cd "$worktree" && xargs -0 touch)
fi
# In a shared target directory the build replaces this build's debug/hermesd (the binary the
# e2e tests run): keep it aside and put it back, whatever happens.
current="$target/debug/hermesd"
if [[ -f $current ]]; then
  cp -p "$current" "$current.kept-by-rolling-upgrade"
  trap 'mv -f "$current.kept-by-rolling-upgrade" "$current"' EXIT
fi
(
  cd "$worktree"
  # The commit's own toolchain pin (rust-toolchain.toml), linked from stable when it matches.
  if [[ -f deploy/dev/toolchain.sh ]]; then
    # shellcheck source=/dev/null
    source deploy/dev/toolchain.sh
    ensure_pinned_toolchain
  fi
  CARGO_TARGET_DIR=$target nice -n 19 cargo build --locked -p hermesd --bin hermesd
)
cp "$current" "$binary"
# Cargo names a workspace's own crates by their path inside the workspace, so in a shared
# target directory the build above wrote the previous release's crates, and their build
# scripts' output (the generated sandbox protocol), under the names this checkout's use, newer
# than this checkout's sources: they would pass as fresh. Touched, this checkout's crates are
# built again from its own sources by the next build.
if [[ $target == "${CARGO_TARGET_DIR:-}" ]]; then
  git -C "$root" ls-files -z -- libs services tests loadtest migrations skills | (cd "$root" && xargs -0 touch)
fi
echo "$binary"
