#!/usr/bin/env bash
# cross/setup.sh TARGET... — installs what building (and testing under
# qemu) needs for each target: x86_64, aarch64, armv7. Idempotent; every
# install goes through apt-get, pip, cargo or rustup by package name, and
# each step checks its result and names itself when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh
[ $# -gt 0 ] || set -- x86_64 aarch64 armv7

fail() { echo "cross/setup.sh: $*" >&2; exit 1; }
bash ci/setup.sh || fail "step 'ci/setup.sh' failed" # host musl build, lints, file, tmux
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
for name in "$@"; do
  triple "$name" >/dev/null || fail "unknown target '$name'"
  [ "$name" = x86_64 ] && continue
  emu=$(emulator "$name")
  if ! command -v "$emu" >/dev/null 2>&1; then
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq qemu-user-static >/dev/null; } \
      || fail "step 'apt-get install qemu-user-static' failed"
    command -v "$emu" >/dev/null 2>&1 || fail "qemu-user-static installed no $emu"
  fi
  # zig is the C compiler (ring) and linker for the ARM targets.
  if ! python3 -m ziglang version >/dev/null 2>&1; then
    python3 -m pip install --quiet ziglang || fail "step 'pip install ziglang' failed"
    python3 -m ziglang version >/dev/null 2>&1 || fail "zig does not run after 'pip install ziglang'"
  fi
  if ! command -v cargo-zigbuild >/dev/null 2>&1; then
    cargo install --quiet --locked cargo-zigbuild || fail "step 'cargo install cargo-zigbuild' failed"
    command -v cargo-zigbuild >/dev/null 2>&1 \
      || fail "cargo-zigbuild is installed but not on PATH (add \$CARGO_HOME/bin, usually ~/.cargo/bin)"
  fi
  case "$name" in
    aarch64)
      rustup target list --installed | grep -qx aarch64-unknown-linux-musl \
        || rustup target add aarch64-unknown-linux-musl || fail "step 'rustup target add aarch64-unknown-linux-musl' failed"
      ;;
    armv7)
      rustup component list --installed | grep -q '^rust-src' \
        || rustup component add rust-src || fail "step 'rustup component add rust-src' failed"
      ;;
  esac
done
