#!/usr/bin/env bash
# cross/test.sh TARGET — builds the test suite for the target and runs it,
# under qemu-user for the ARM targets (the tests start tern through the
# same emulator). Then runs the release binary's --version and a stand-in
# session check under the emulator.
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh
name=${1:?usage: cross/test.sh x86_64|aarch64|armv7}
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
  echo "cross/test.sh: running the suite for $t under $emu" >&2
fi
cargo_for "$name" test --no-fail-fast
