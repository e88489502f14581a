#!/usr/bin/env bash
# Builds tern's static release binaries and reports their sizes.
#
#   size-report/run.sh         default builds for x86_64, aarch64 and armv7 and
#                              the x86_64 core build: size, static check, x86_64
#                              budgets (CI runs this; the ARM core builds, which
#                              have no budget, only with --all)
#   size-report/run.sh --all   every feature combination on every target;
#                              rewrites size-report/REPORT.md
#   TARGETS="x86_64" size-report/run.sh --all    a subset of targets
#
# Budgets (x86_64): core <= 5.5 MB, default <= 7.0 MB, full <= 12 MB.
# Exceeding one fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source cross/common.sh

targets=${TARGETS:-"x86_64 aarch64 armv7"}
core_budget=5500000
default_budget=7000000
full_budget=12000000
mode=${1:-core}

mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1000000 }'; }

# size TARGET FEATURE-ARGS -> bytes of the static release binary
size() {
  local out
  # shellcheck disable=SC2086
  out=$(bash cross/build.sh "$1" $2)
  echo "${out##* }"
}

# over NAME BYTES BUDGET -> fails the run when BYTES exceeds BUDGET
over() {
  if [ "$2" -gt "$3" ]; then
    echo "size-report: the x86_64 $1 binary ($(mb "$2")) exceeds its budget of $(mb "$3")" >&2
    exit 1
  fi
}

declare -A core default
for t in $targets; do
  default[$t]=$(size "$t" "")
  if [ "$t" = x86_64 ] || [ "$mode" = "--all" ]; then
    core[$t]=$(size "$t" "--no-default-features")
    echo "tern core ($(triple "$t")): ${core[$t]} bytes ($(mb "${core[$t]}")); default: ${default[$t]} bytes ($(mb "${default[$t]}")); statically linked"
  else
    echo "tern default ($(triple "$t")): ${default[$t]} bytes ($(mb "${default[$t]}")); statically linked"
  fi
done
if [ -n "${core[x86_64]:-}" ]; then
  over core "${core[x86_64]}" "$core_budget"
  over default "${default[x86_64]}" "$default_budget"
fi
[ "$mode" = "--all" ] || exit 0

combos=("mcp:--no-default-features --features mcp" "repl:--no-default-features --features repl" "voice:--no-default-features --features voice" "tui:--no-default-features --features tui" "full:--features full")
rows=()
for t in $targets; do
  rows+=("| $t | core | ${core[$t]} | $(mb "${core[$t]}") | 0 |")
  rows+=("| $t | default | ${default[$t]} | $(mb "${default[$t]}") | $((default[$t] - core[$t])) |")
  for combo in "${combos[@]}"; do
    name=${combo%%:*}
    bytes=$(size "$t" "${combo#*:}")
    rows+=("| $t | $name | $bytes | $(mb "$bytes") | $((bytes - core[$t])) |")
    if [ "$t" = x86_64 ] && [ "$name" = full ]; then over full "$bytes" "$full_budget"; fi
  done
done

{
  echo "# Size report"
  echo
  echo "Static release binaries (opt-level z, fat LTO, panic=abort, stripped,"
  echo "non-PIE, std rebuilt with optimize_for_size by cross/build.sh). Regenerate"
  echo "with \`size-report/run.sh --all\` (TARGETS=… for fewer). Budgets on"
  echo "x86_64: core ≤ 5.5 MB, default ≤ 7.0 MB, full ≤ 12 MB. The default build"
  echo "is what \`cargo build --release\` gives (the features in Cargo.toml's default list)."
  echo
  echo "| target | build | bytes | size | delta vs core |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if command -v cargo-bloat >/dev/null 2>&1; then
    echo
    echo "## Largest contributors (x86_64 core, .text by crate, cargo-bloat)"
    echo
    echo '```'
    # Its own target dir: cargo-bloat rebuilds unstripped and would replace the real binary.
    CARGO_TARGET_DIR=target/bloat cargo bloat --release --target x86_64-unknown-linux-musl \
      --no-default-features --crates -n 15 2>/dev/null | grep -v "^Note" || true
    echo '```'
  fi
} > size-report/REPORT.md
echo "wrote size-report/REPORT.md"
