#!/usr/bin/env bash
# cross/setup.sh TARGET... — installs what building (and testing under
# qemu) needs for each target: x86_64, aarch64, armv7. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh
[ $# -gt 0 ] || set -- x86_64 aarch64 armv7

bash ci/setup.sh # host musl build, lints, file, tmux
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
for name in "$@"; do
  triple "$name" >/dev/null
  [ "$name" = x86_64 ] && continue
  if ! command -v "$(emulator "$name")" >/dev/null 2>&1; then
    $sudo apt-get update -qq && $sudo apt-get install -y -qq qemu-user-static >/dev/null
  fi
  # zig is the C compiler (ring) and linker for the ARM targets.
  python3 -m ziglang version >/dev/null 2>&1 || python3 -m pip install --quiet ziglang
  command -v cargo-zigbuild >/dev/null 2>&1 || cargo install --quiet --locked cargo-zigbuild
  case "$name" in
    aarch64) rustup target list --installed | grep -qx aarch64-unknown-linux-musl || rustup target add aarch64-unknown-linux-musl ;;
    armv7) rustup component list --installed | grep -q '^rust-src' || rustup component add rust-src ;;
  esac
done
