#!/usr/bin/env bash
# Provisions Claude Code itself for tests/it/parity.rs, by package name through
# npm (@anthropic-ai/claude-code, the version the recorded results came
# from), in a cache folder. The test runs it against the scripted stand-in
# only; it never reaches a real model. Prints the program and nothing else
# on stdout:
#   TERN_CLAUDE_CODE=<dir>/node_modules/.bin/claude
set -euo pipefail

fail() { echo "ci/claude.sh: $*" >&2; exit 1; }
version=2.1.332
dir=${TERN_CLAUDE_DIR:-$HOME/.cache/tern-claude-code}
claude=$dir/node_modules/.bin/claude

ready() { [ -x "$claude" ] && "$claude" --version 2>/dev/null | grep -q "^$version "; }
if ! ready; then
  command -v npm >/dev/null || fail "needs npm (ci/sdk.sh installs nodejs and npm)"
  echo "ci/claude.sh: installing @anthropic-ai/claude-code@$version into $dir" >&2
  mkdir -p "$dir" || fail "step 'mkdir $dir' failed"
  [ -f "$dir/package.json" ] || echo '{"name":"tern-parity","private":true}' >"$dir/package.json" \
    || fail "step 'write $dir/package.json' failed"
  (cd "$dir" && npm install --silent --no-audit --no-fund "@anthropic-ai/claude-code@$version" >&2) \
    || fail "step 'npm install @anthropic-ai/claude-code@$version' failed"
  ready || fail "Claude Code $version does not run after installing it"
fi
echo "TERN_CLAUDE_CODE=$claude"
