#!/usr/bin/env bash
# cross/build.sh TARGET [CARGO ARGS...] — builds the static release binary
# for x86_64, aarch64 or armv7 and prints its path and size.
#   cross/build.sh aarch64
#   cross/build.sh armv7 --features full
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh
name=${1:?usage: cross/build.sh x86_64|aarch64|armv7 [cargo args]}
shift
bash cross/setup.sh "$name" >&2
cargo_for "$name" build --release --quiet "$@" >&2
bin="$(target_dir "$name")/$(triple "$name")/release/tern"
file "$bin" | grep -q "statically linked" || { echo "cross/build.sh: $bin is not static: $(file "$bin")" >&2; exit 1; }
echo "$bin $(stat -c %s "$bin")"
