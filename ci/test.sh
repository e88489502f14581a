#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + end-to-end + constrained-
# host tests, the suite again under qemu for aarch64 and armv7, a release
# smoke run per target, and the static binaries against their size budget.
set -euo pipefail
cd "$(dirname "$0")/.."

bash cross/setup.sh x86_64 aarch64 armv7
# A real llama-server + SmolLM2 for the local-model test (built once, cached).
eval "$(bash ci/llama.sh | grep '^TERN_LLAMA_')"
export TERN_LLAMA_SERVER TERN_LLAMA_MODEL TERN_REQUIRE_LLAMA=1
# The official Python Agent SDK for the SDK protocol tests.
eval "$(bash ci/sdk.sh | grep '^TERN_SDK_')"
export TERN_SDK_PYTHON TERN_REQUIRE_SDK=1
# Real MCP servers from npm and PyPI.
eval "$(bash ci/mcp.sh | grep '^TERN_MCP_')"
export TERN_MCP_DIR TERN_REQUIRE_MCP=1
cargo fmt --check
cargo clippy --all-features --all-targets -- -D warnings
# The constrained-host tests run the static binary in an empty root.
cargo build --release --quiet --target x86_64-unknown-linux-musl
cargo test --all-features
bash cross/test.sh aarch64
bash cross/test.sh armv7
for target in x86_64 aarch64 armv7; do
  bash cross/smoke.sh "$target"
done
size-report/run.sh
