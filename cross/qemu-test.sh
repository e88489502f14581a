#!/usr/bin/env bash
# cross/qemu-test.sh EMULATOR TEST-BINARY [ARGS...] — cargo's runner for the
# test binaries of a foreign target (cross/test.sh sets it).
#
# qemu-user can deadlock a child between fork and exec when another thread
# of the emulated process holds a lock: bash_attacks under qemu-arm, its
# forked child asleep on a futex before exec, for good (two CI runs in a
# row; CI once ran out of its 90 minutes on it). Natively nothing hangs,
# and under either emulator nothing has hung with one test thread. So:
#   - under qemu every test binary run unfiltered runs with one test
#     thread: bash_attacks hung with more under qemu-arm, and the
#     library's own tests (they fork shells too) under qemu-arm once and
#     under qemu-aarch64 once (400 s lost before the one-thread rerun
#     passed in 64 s);
#   - every test binary gets a time limit; one that runs past it is
#     killed, with what it forked, and run once more with one test thread;
#     a second hang fails the suite.
set -u
emu=${1:?usage: cross/qemu-test.sh EMULATOR TEST-BINARY [ARGS...]}
shift
bin=$1
name=$(basename -- "$bin")
limit=${TERN_QEMU_TEST_LIMIT:-150}
# The integration tests are one binary (tests/it): the whole of it took
# about 170 s under qemu; its architecture-dependent part (tests/arch)
# about 35, and 46 on a machine busy with other builds.
# The library's unit tests took 105 s with one thread under qemu-arm on a
# quiet machine (an awk differential test alone 24 s) and ran past 150 s
# on a busy one, which failed CI as a hang; 400 s leaves room for a busy
# machine and still ends a real hang long before CI's limit.
case "$name" in
  it-*) limit=${TERN_QEMU_TEST_LIMIT:-600} ;;
  arch-*) limit=${TERN_QEMU_TEST_LIMIT:-300} ;;
  tern-*) limit=${TERN_QEMU_TEST_LIMIT:-400} ;;
esac
serial=()
if [[ $# -eq 1 ]]; then
  serial=(--test-threads=1)
fi

# Runs the binary under the limit; on a hang, kills what is left of it:
# the stuck child may sit in a process group of its own, out of timeout's
# reach, and would hold CI's output open.
limited() {
  timeout --kill-after=10 "$limit" "$emu" "$@"
  local rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    local pid args
    for pid in $(pgrep -f -- "$bin"); do
      args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
      case "$args" in "$emu $bin "*) kill -KILL "$pid" 2>/dev/null ;; esac
    done
  fi
  return "$rc"
}

limited "$@" "${serial[@]}"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "cross/qemu-test.sh: $name ran past ${limit} s under $emu (qemu-user deadlocks a forked child now and then); running it again with one test thread" >&2
  limited "$@" --test-threads=1
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "cross/qemu-test.sh: $name ran past ${limit} s again, with one test thread: a real hang" >&2
  fi
fi
exit "$rc"
