#!/usr/bin/env bash
# Installs what the benchmarks compare against, by package name:
#   apt-get: ripgrep (Grep against rg), time (GNU time: a child's own peak
#            RSS, see benches/footprint.rs)
#   npm:     Claude Code and Codex (their native Linux binaries come as
#            optional dependencies of the packages), into target/bench-tools
# Prints where they are.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "benches/setup.sh: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
if ! command -v rg >/dev/null 2>&1 || [ ! -x /usr/bin/time ]; then
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq ripgrep time >/dev/null; } \
    || fail "step 'apt-get install ripgrep time' failed"
fi
mkdir -p target/bench-tools
claude=target/bench-tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude
codex=target/bench-tools/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
if [ ! -x "$claude" ] || [ ! -x "$codex" ]; then
  (cd target/bench-tools && npm install --no-audit --no-fund --silent @anthropic-ai/claude-code @openai/codex) \
    || fail "step 'npm install @anthropic-ai/claude-code @openai/codex' failed"
  [ -x "$claude" ] || fail "the npm package left no native binary at $claude"
  [ -x "$codex" ] || fail "the npm package left no native binary at $codex"
fi
echo "ready: rg $(rg --version | head -1 | cut -d' ' -f2), Claude Code $("$claude" --version 2>/dev/null || echo '?'), $("$codex" --version 2>/dev/null || echo 'Codex ?')" >&2
