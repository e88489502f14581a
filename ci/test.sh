#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + end-to-end tests, and the
# static musl build checked against its size budget.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/setup.sh
cargo fmt --check
cargo clippy --all-features --all-targets -- -D warnings
cargo test --all-features
size-report/run.sh
