#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + end-to-end + constrained-
# host tests, the architecture-dependent tests under qemu for aarch64 and
# armv7 (built beside the host's build), a release smoke run per target,
# and the static binaries against their size budget. Everything it needs
# is installed through apt-get, pip, npm and cargo by package name
# (ci/setup.sh, cross/setup.sh, ci/llama.sh, ci/sdk.sh, ci/claude.sh,
# ci/mcp.sh, ci/voice.sh); cargo's build folder is kept between runs in
# ~/.cache/tern-build, like those tools' caches.
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

# Cargo's build folder is a tool cache like the others (~/.cache/tern-*), the
# way CI caches for Rust keep target/: a fresh clone borrows it and gives it
# back at the end, so the dependencies — most of every build — compile once
# per Cargo.lock, toolchain and target, and cargo's fingerprints rebuild
# whatever changed (every crate of this clone, whose sources are new). Only a
# clone without target/ takes part: a developer's own tree is left alone.
build_cache=${TERN_BUILD_CACHE:-$HOME/.cache/tern-build}
borrowed=
arm_pid=
# The background ARM builds (below) end with the run, whichever way it ends.
stop_arm_builds() {
  [ -n "$arm_pid" ] || return 0
  # Its own process group (setsid below): cargo, rustc and the linkers too.
  kill -- "-$arm_pid" 2>/dev/null || true
  wait "$arm_pid" 2>/dev/null || true
  arm_pid=
}
# So do the provisioning scripts running in the background (below).
prov_pids=()
stop_provisioning() {
  local pid
  for pid in "${prov_pids[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  prov_pids=()
}
give_back() {
  # Nothing may still write into the folder being given back.
  stop_arm_builds
  stop_provisioning
  [ -n "$borrowed" ] && [ -d target ] || return 0
  rm -rf target/tmp
  # A folder that has grown past its budget (old dependency versions, other
  # clones' crates) starts over rather than grow without bound.
  if [ "$(du -sm target | cut -f1)" -gt "${TERN_BUILD_CACHE_MB:-12000}" ]; then
    echo "ci/test.sh: the build folder outgrew its cache budget; the next run builds from nothing" >&2
    rm -rf target
    return 0
  fi
  mkdir -p "$(dirname "$build_cache")" && rm -rf "$build_cache" && mv target "$build_cache" \
    && echo "ci/test.sh: cargo's build folder kept in $build_cache for the next run" >&2
}
trap give_back EXIT
if [ ! -e target ]; then
  borrowed=1
  # A move, not a copy: on one file system it is instant, where a copy would
  # read and write gigabytes.
  if [ -d "$build_cache" ] && mv "$build_cache" target 2>/dev/null; then
    echo "ci/test.sh: cargo's build folder borrowed from $build_cache" >&2
  else
    echo "ci/test.sh: no kept build folder ($build_cache): every crate builds from nothing" >&2
  fi
fi

# The provisioning scripts print TERN_* lines (where what they set up is).
# They run in the background, beside the builds, and the suite waits for
# them before the first test: from nothing they download for a minute or two
# (llama.cpp's server comes prebuilt; where it must be built from source that
# is ten minutes on two cores, so it runs niced, in what the compilers leave
# idle); with the caches they take seconds. Two chains: the scripts
# that may call apt-get, one after the other (dpkg takes one at a time), and
# llama.cpp on its own. A failing script fails the run, naming itself.
prov_dir=$(mktemp -d)
provision_in_background() {
  local nice=$1; shift
  setsid bash -c '
    nice=$1 dir=$2; shift 2
    for script in "$@"; do
      name=$(basename "$script" .sh)
      began=$(date +%s)
      if ! nice -n "$nice" bash "$script" >"$dir/$name.out" 2>"$dir/$name.log"; then
        echo "$script" >"$dir/failed"
        exit 1
      fi
      echo "$(( $(date +%s) - began ))" >"$dir/$name.took"
    done
  ' _ "$nice" "$prov_dir" "$@" &
  prov_pids+=($!)
}
# Waits for every chain, shows what each script said and how long it took,
# and exports the lines it printed.
finish_provisioning() {
  local pid failed= script name line
  for pid in "${prov_pids[@]}"; do
    wait "$pid" || failed=1
  done
  prov_pids=()
  for script in "$@"; do
    name=$(basename "$script" .sh)
    [ -f "$prov_dir/$name.log" ] || continue
    if [ -f "$prov_dir/$name.took" ]; then
      echo "ci/test.sh: $script took $(cat "$prov_dir/$name.took")s (in the background)" >&2
    fi
    sed "s|^|  $name: |" "$prov_dir/$name.log" >&2
  done
  if [ -n "$failed" ]; then
    echo "ci/test.sh: $(cat "$prov_dir/failed" 2>/dev/null || echo 'a provisioning script') failed (its output is above)" >&2
    exit 1
  fi
  for script in "$@"; do
    name=$(basename "$script" .sh)
    while IFS= read -r line; do
      case "$line" in
        TERN_*=*) export "${line%%=*}=${line#*=}" ;;
        *) echo "ci/test.sh: $script printed an unexpected line: $line" >&2; exit 1 ;;
      esac
    done <"$prov_dir/$name.out"
  done
}

step "cross/setup.sh (toolchains, qemu-user, zig)"
bash cross/setup.sh x86_64 aarch64 armv7
step "provisioning started beside the builds: ci/sdk.sh, ci/acp.sh (the ACP client SDK), ci/otel.sh (the OTLP schema), ci/fleet.sh (the fleet examples' validators), ci/claude.sh, ci/mcp.sh and ci/voice.sh (Agent SDKs, Claude Code, MCP servers, speech); ci/llama.sh (llama-server, SmolLM2 and Gemma 3 270M), niced"
provision_in_background 0 ci/sdk.sh ci/acp.sh ci/otel.sh ci/fleet.sh ci/claude.sh ci/mcp.sh ci/voice.sh
provision_in_background 10 ci/llama.sh
# Every test that cannot run for want of a kernel feature, binary or server
# fails instead of skipping; only emulator-specific skips remain (and say so).
export TERN_REQUIRE_ALL=1

step "cargo fmt --check"
cargo fmt --check

# What is built for ARM (static binaries and tests, in a build folder of
# their own: cross/common.sh) builds beside the host's builds: the release
# builds end in a long single-threaded link-time optimisation, which
# leaves a core free on the 2-core machine. Nothing runs a test until both
# are built, so no test's timing shares the machine with a compiler.
arm_log=$(mktemp)
arm_started=$(date +%s)
setsid bash -c 'bash cross/test.sh aarch64 --build-only && bash cross/test.sh armv7 --build-only' \
  >"$arm_log" 2>&1 &
arm_pid=$!
step "ARM builds started beside the host's (static binaries and tests; log: $arm_log)"

step "cargo clippy"
cargo clippy --all-features --all-targets -- -D warnings
# The constrained-host tests run the static binary in an empty root.
step "static release build (x86_64)"
bash cross/build.sh x86_64 >/dev/null
step "cargo test --all-features --no-run (the host suite's build)"
cargo test --all-features --no-run
step "cargo clippy (core only, no default features)"
cargo clippy --no-default-features --all-targets -- -D warnings
# The size report's core build, while the ARM builds finish (from nothing
# the host side waited ~6 minutes here with a core idle); the default
# binary goes back in place after it (fresh: cargo only copies it), since
# the constrained-host tests run it.
step "static release build, core (x86_64, for the size report)"
bash cross/build.sh x86_64 --no-default-features >/dev/null
bash cross/build.sh x86_64 >/dev/null
step "waiting for the ARM builds"
if ! wait "$arm_pid"; then
  arm_pid=
  cat "$arm_log" >&2
  echo "ci/test.sh: the ARM builds failed (their output is above)" >&2
  exit 1
fi
arm_pid=
echo "ci/test.sh: the ARM builds took $(( $(date +%s) - arm_started ))s beside the host's" >&2
rm -f "$arm_log"
step "waiting for the provisioning scripts"
finish_provisioning ci/sdk.sh ci/acp.sh ci/otel.sh ci/fleet.sh ci/claude.sh ci/mcp.sh ci/voice.sh ci/llama.sh
rm -rf "$prov_dir"
step "cargo test --all-features"
cargo test --all-features
step "cross/test.sh aarch64 (built above)"
bash cross/test.sh aarch64
step "cross/test.sh armv7 (built above)"
bash cross/test.sh armv7
for target in x86_64 aarch64 armv7; do
  step "cross/smoke.sh $target"
  bash cross/smoke.sh "$target"
done
step "size-report/run.sh"
size-report/run.sh
step "done"
