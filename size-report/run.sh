#!/usr/bin/env bash
# Builds tern's static release binary and reports its size.
#
#   size-report/run.sh            core build for x86_64 musl: size, static check, budget
#   size-report/run.sh --all      every feature combination; rewrites size-report/REPORT.md
#
# Budgets (x86_64): core <= 4 MB, full <= 10 MB. Exceeding one fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
core_budget=$((4 * 1000 * 1000))
full_budget=$((10 * 1000 * 1000))
mode=${1:-core}

build() { # $1 = cargo feature arguments; prints the binary's size in bytes
  # shellcheck disable=SC2086
  cargo build --quiet --release --target "$target" $1 >&2
  local bin="target/$target/release/tern"
  if ! file "$bin" | grep -q "statically linked"; then
    echo "size-report: $bin is not statically linked: $(file "$bin")" >&2
    exit 1
  fi
  stat -c %s "$bin"
}

mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1000000 }'; }

core=$(build "--no-default-features")
echo "tern core ($target): $core bytes ($(mb "$core")), statically linked; budget $(mb $core_budget)"
if [ "$core" -gt "$core_budget" ]; then
  echo "size-report: core binary exceeds its budget" >&2
  exit 1
fi
[ "$mode" = "--all" ] || exit 0

rows=()
for combo in "default:" "mcp:--features mcp" "repl:--features repl" "voice:--features voice" "tui:--features tui" "full:--features full"; do
  name=${combo%%:*}
  args=${combo#*:}
  [ "$name" = default ] && args=""
  size=$(build "$args")
  rows+=("| $name | $size | $(mb "$size") | $((size - core)) |")
  if [ "$name" = full ] && [ "$size" -gt "$full_budget" ]; then
    echo "size-report: full binary exceeds its budget" >&2
    exit 1
  fi
done

{
  echo "# Size report"
  echo
  echo "Static release binaries for \`$target\` (opt-level z, fat LTO, panic=abort,"
  echo "stripped, non-PIE). Regenerate with \`size-report/run.sh --all\`."
  echo
  echo "| build | bytes | size | delta vs core |"
  echo "|---|---|---|---|"
  echo "| core | $core | $(mb "$core") | 0 |"
  printf '%s\n' "${rows[@]}"
  if command -v cargo-bloat >/dev/null 2>&1; then
    echo
    echo "## Largest contributors (core, .text by crate, from cargo-bloat)"
    echo
    echo '```'
    # Its own target dir: cargo-bloat rebuilds unstripped and would replace the real binary.
    CARGO_TARGET_DIR=target/bloat cargo bloat --release --target "$target" --crates -n 15 2>/dev/null | grep -v "^Note" || true
    echo '```'
  fi
} > size-report/REPORT.md
echo "wrote size-report/REPORT.md"
