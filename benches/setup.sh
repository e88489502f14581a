#!/usr/bin/env bash
# Installs what the footprint benchmark compares against: ripgrep (Debian)
# and Claude Code (npm; its native Linux binary comes as an optional
# dependency of the package), into target/bench-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "benches/setup.sh: $*" >&2; exit 1; }
if ! command -v rg >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq ripgrep >/dev/null; } \
    || fail "step 'apt-get install ripgrep' failed"
fi
mkdir -p target/bench-tools
claude=target/bench-tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude
if [ ! -x "$claude" ]; then
  (cd target/bench-tools && npm install --no-audit --no-fund --silent @anthropic-ai/claude-code) \
    || fail "step 'npm install @anthropic-ai/claude-code' failed"
  [ -x "$claude" ] || fail "the npm package left no native binary at $claude"
fi
echo "ready: rg $(rg --version | head -1 | cut -d' ' -f2), Claude Code $("$claude" --version 2>/dev/null || echo '?')"
