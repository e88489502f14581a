#!/usr/bin/env bash
# cross/qemu-test.sh EMULATOR TEST-BINARY [ARGS...] — cargo's runner for the
# test binaries of a foreign target (cross/test.sh sets it).
#
# qemu-user can deadlock a child between fork and exec when another thread
# of the emulated process holds a lock (seen here: bash_attacks under
# qemu-arm, its forked child asleep on a futex before exec, for good; CI ran
# out of its 90 minutes on it). The same binary never hangs natively or
# under qemu-aarch64. So each test binary gets a time limit; one that runs
# past it is killed with its whole process group and run once more, one
# test at a time, which leaves no second thread to hold a lock. A second
# hang fails the suite.
set -u
emu=${1:?usage: cross/qemu-test.sh EMULATOR TEST-BINARY [ARGS...]}
shift
limit=${TERN_QEMU_TEST_LIMIT:-300}
timeout --kill-after=10 "$limit" "$emu" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "cross/qemu-test.sh: $(basename -- "$1") ran past ${limit} s under $emu (qemu-user deadlocks a forked child now and then); running it again with one test thread" >&2
  timeout --kill-after=10 "$limit" "$emu" "$@" --test-threads=1
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "cross/qemu-test.sh: $(basename -- "$1") ran past ${limit} s again, with one test thread: a real hang" >&2
  fi
fi
exit "$rc"
