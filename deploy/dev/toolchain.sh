#!/usr/bin/env bash
# Make sure the toolchain pinned in rust-toolchain.toml is available without a download:
# if rustup does not know it by name but the installed stable toolchain is that version,
# link it under the pinned name. Sourced by the other dev scripts.
set -euo pipefail

ensure_pinned_toolchain() {
  local root pinned
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  pinned=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$root/rust-toolchain.toml")
  command -v rustup >/dev/null 2>&1 || return 0
  # Run from / so this rustup call itself is not redirected by rust-toolchain.toml.
  if (cd / && rustup toolchain list) | grep -q "^${pinned}-"; then
    return 0
  fi
  local sysroot version
  sysroot=$(cd / && rustc +stable --print sysroot 2>/dev/null) || return 0
  version=$(cd / && rustc +stable --version | awk '{print $2}')
  if [[ "$version" == "$pinned" ]]; then
    echo "toolchain: linking installed stable ($version) as $pinned" >&2
    (cd / && rustup toolchain link "$pinned" "$sysroot")
  else
    echo "toolchain: rust-toolchain.toml pins $pinned but stable is $version; rustup will try to install $pinned" >&2
  fi
}
