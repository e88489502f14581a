#!/usr/bin/env bash
# cross/test.sh TARGET [--all | --build-only] — builds the tests for the
# target and runs them, under qemu-user for the ARM targets (the tests
# start tern through the same emulator). --build-only builds everything a
# run needs (the static binary too) and runs nothing: ci/test.sh builds
# ARM while the host suite builds.
#
# On x86_64, and with --all, that is the whole suite. Under qemu it is what
# depends on the architecture, since the rest is the same code on the same
# kernel and the host suite already ran it: the library's unit tests
# (syscall numbers, the seccomp filter's program, struct layouts, 32-bit
# sizes on armv7), the static binary in an empty root (constrained), a
# whole session end to end, the sandbox and its escapes, the shell's
# processes and the child environment, file tools against hostile trees,
# the command line and sessions on disk (tests/arch: those modules of
# tests/it, built alone). Building every test for a foreign target and
# running them in the emulator took two thirds of CI's time.
# cross/smoke.sh runs the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh
name=${1:?usage: cross/test.sh x86_64|aarch64|armv7 [--all]}
all=${2:-}
no_run=
if [ "$all" = --build-only ]; then
  no_run=--no-run
  all=
fi
bash cross/setup.sh "$name" >&2
t=$(triple "$name")
emu=$(emulator "$name")
if [ -n "$emu" ]; then
  # The constrained-host tests run this target's static release binary.
  read -r static_bin _ < <(bash cross/build.sh "$name")
  export TERN_STATIC_BIN="$PWD/$static_bin"
  runner_var="CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_RUNNER"
  # Each test binary under a time limit (cross/qemu-test.sh says why).
  export "$runner_var=$PWD/cross/qemu-test.sh $emu"
  export TERN_TEST_RUNNER="$emu"
fi
if [ -n "$emu" ] && [ "$all" != --all ]; then
  echo "cross/test.sh: ${no_run:+building }the architecture-dependent tests for $t under $emu (--all for every test)" >&2
  cargo_for "$name" test --no-fail-fast --lib $no_run
  # The integration tests that depend on the architecture (tests/arch).
  cargo_for "$name" test --no-fail-fast --test arch $no_run
else
  [ -z "$emu" ] || echo "cross/test.sh: running the whole suite for $t under $emu" >&2
  cargo_for "$name" test --no-fail-fast $no_run
fi
