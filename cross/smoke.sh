#!/usr/bin/env bash
# cross/smoke.sh TARGET — the release binary for TARGET (built by
# cross/build.sh) runs `--version` and one session against the stand-in
# server, under qemu-user for the ARM targets.
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh
name=${1:?usage: cross/smoke.sh x86_64|aarch64|armv7}
read -r bin size < <(bash cross/build.sh "$name")
bin=$(realpath "$bin")
emu=$(emulator "$name")
run() { if [ -n "$emu" ]; then "$emu" "$bin" "$@"; else "$bin" "$@"; fi; }

version=$(run --version)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "smoke($name): bad version line: $version" >&2; exit 1; }

# --all-features: the host suite built it so (no second build of the lib).
cargo build --quiet --all-features --example standin
url_file=$(mktemp)
target/debug/examples/standin >"$url_file" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$url_file"' EXIT
for _ in $(seq 100); do [ -s "$url_file" ] && break; sleep 0.05; done
work=$(mktemp -d)
url=$(cat "$url_file")
answer=$(cd "$work" && env -i PATH="$PATH" HOME="$work" ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY=sk-smoke \
  ${emu:+"$emu"} "$bin" -p 'say hello') || { echo "smoke($name): the session failed" >&2; exit 1; }
rm -rf "$work"
case "$answer" in
  *"Hello from the tern stand-in"*) echo "smoke($name): ok — $bin ($size bytes), $version, stand-in session answered" ;;
  *) echo "smoke($name): unexpected answer: $answer" >&2; exit 1 ;;
esac
