#!/usr/bin/env bash
# Installs what the footprint benchmark compares against: ripgrep (Debian)
# and Claude Code (npm; its native Linux binary comes as an optional
# dependency from the npm registry), into target/bench-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v rg >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq ripgrep >/dev/null
fi
mkdir -p target/bench-tools
if [ ! -x target/bench-tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude ]; then
  (cd target/bench-tools && npm install --no-audit --no-fund --silent @anthropic-ai/claude-code)
fi
echo "ready: rg $(rg --version | head -1 | cut -d' ' -f2), Claude Code $(target/bench-tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude --version 2>/dev/null || echo '?')"
