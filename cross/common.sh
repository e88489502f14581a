# Shared by cross/*.sh and size-report/run.sh: how each target is named,
# built and run. Source it; don't run it.

# triple NAME -> the Rust target triple for x86_64 | aarch64 | armv7
triple() {
  case "$1" in
    x86_64) echo x86_64-unknown-linux-musl ;;
    aarch64) echo aarch64-unknown-linux-musl ;;
    armv7) echo armv7-unknown-linux-musleabihf ;;
    *) echo "unknown target '$1' (expected x86_64, aarch64 or armv7)" >&2; return 2 ;;
  esac
}

# target_dir NAME -> cargo's build folder for the target. Everything built
# for the ARM targets (release binaries and tests) has a folder of its own,
# target/qemu (they run under qemu), for two reasons: the host build scripts
# they compile are fingerprinted on RUSTC_BOOTSTRAP, which the host suite
# runs without, so sharing target/ rebuilt them back and forth (and the
# smoke run's stand-in from nothing after them); and cargo locks a build
# folder whole, so with a folder of its own ARM can build while the host
# suite builds (ci/test.sh does).
target_dir() {
  case "$1" in
    x86_64) echo target ;;
    *) echo target/qemu ;;
  esac
}

# emulator NAME -> the qemu-user binary that runs it here (empty for the host)
emulator() {
  case "$1" in
    x86_64) echo "" ;;
    aarch64) echo qemu-aarch64-static ;;
    armv7) echo qemu-arm-static ;;
  esac
}

# cargo_for NAME SUBCOMMAND ARGS... -> runs cargo the way the target needs:
# the host toolchain for x86_64, zig as C compiler and linker for the ARM
# targets, and std built from source for armv7 (no prebuilt std exists).
#
# Builds (not tests) of x86_64 and armv7 compile std too, with its
# optimize_for_size feature and the release profile's LTO reaching into it:
# about 375 KB less on x86_64 than the prebuilt std, panic messages kept
# (features.md, "Size"), and without panic locations (their messages
# stay). RUSTC_BOOTSTRAP lets the stable toolchain take the -Z flags, as
# armv7 already needs.
cargo_for() {
  local name=$1 sub=$2
  shift 2
  local t
  t=$(triple "$name")
  # -Z location-detail=none: panics keep their message but not the file,
  # line and column of every possible panic site (~176 KB on x86_64).
  # -C force-unwind-tables=no: with panic=abort nothing unwinds, so the
  # Rust code's .eh_frame only served the backtrace a panic prints under
  # RUST_BACKTRACE; without it the x86_64 core build is 496 KB smaller
  # (5,538,272 -> 5,030,368 bytes). A panic still prints its message.
  local small=(-Z build-std=std,panic_abort -Z build-std-features=optimize_for_size
    --config "target.$t.rustflags=[\"-Zlocation-detail=none\", \"-Cforce-unwind-tables=no\"]")
  # Every ARM build and test, and x86_64's static build, run with
  # RUSTC_BOOTSTRAP=1, even those that pass no -Z flag: build scripts
  # (proc-macro2's among them) are fingerprinted on it, and a build without
  # it after one with it rebuilt everything that depends on them (CI built
  # the x86_64 static binary again after the aarch64 one, 95 s each time).
  local arm_dir
  arm_dir=$(target_dir "$name")
  case "$name" in
    x86_64)
      if [ "$sub" = build ]; then
        RUSTC_BOOTSTRAP=1 cargo build "${small[@]}" --target "$t" "$@"
      else
        cargo "$sub" --target "$t" "$@"
      fi
      ;;
    aarch64)
      if [ "$sub" = build ]; then
        RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$arm_dir cargo-zigbuild zigbuild --target "$t" "$@"
      else
        RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$arm_dir cargo-zigbuild "$sub" --target "$t" "$@"
      fi
      ;;
    armv7)
      if [ "$sub" = build ]; then
        RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$arm_dir cargo-zigbuild zigbuild "${small[@]}" --target "$t" "$@"
      else
        # the test harness catches panics
        RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$arm_dir cargo-zigbuild "$sub" -Z build-std=std,panic_unwind --target "$t" "$@"
      fi
      ;;
  esac
}
