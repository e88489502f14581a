#!/usr/bin/env bash
# Provisions the official Agent SDKs for tests/it/sdk.rs, by package name:
# the Python SDK (claude-agent-sdk, through pip) in a private virtual
# environment, and the TypeScript SDK (@anthropic-ai/claude-agent-sdk,
# through npm, run with the machine's node) in a cache folder. Prints the
# interpreter and the folder the tests use, and nothing else on stdout:
#   TERN_SDK_PYTHON=<venv>/bin/python
#   TERN_SDK_NODE_DIR=<dir>   (holds node_modules/@anthropic-ai/claude-agent-sdk)
set -euo pipefail

fail() { echo "ci/sdk.sh: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo

venv=${TERN_SDK_VENV:-$HOME/.cache/tern-sdk-venv}
if ! "$venv/bin/python" -c 'import claude_agent_sdk' >/dev/null 2>&1; then
  echo "ci/sdk.sh: installing claude-agent-sdk into $venv" >&2
  python3 -m venv "$venv" 2>/dev/null || {
    # Debian splits venv out of python3.
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq python3-venv >/dev/null; } \
      || fail "step 'apt-get install python3-venv' failed"
    python3 -m venv "$venv" || fail "step 'python3 -m venv $venv' failed"
  }
  "$venv/bin/python" -m pip install -q --upgrade pip >&2 || fail "step 'pip install --upgrade pip' failed"
  "$venv/bin/python" -m pip install -q claude-agent-sdk >&2 || fail "step 'pip install claude-agent-sdk' failed"
  "$venv/bin/python" -c 'import claude_agent_sdk' || fail "claude_agent_sdk does not import after installing it"
fi

node_dir=${TERN_SDK_NODE_DIR:-$HOME/.cache/tern-sdk-node}
node_ready() {
  (cd "$node_dir" && node -e 'import("@anthropic-ai/claude-agent-sdk").then(() => import("zod"))') >/dev/null 2>&1
}
if ! node_ready; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq nodejs npm >/dev/null; } \
      || fail "step 'apt-get install nodejs npm' failed"
  fi
  echo "ci/sdk.sh: installing @anthropic-ai/claude-agent-sdk into $node_dir" >&2
  mkdir -p "$node_dir" || fail "step 'mkdir $node_dir' failed"
  [ -f "$node_dir/package.json" ] || echo '{"name":"tern-sdk-tests","private":true}' >"$node_dir/package.json" \
    || fail "step 'write $node_dir/package.json' failed"
  # The optional packages are Claude Code's own binaries, which the tests
  # never run (they point the SDK at tern); zod is the SDK's peer for tool
  # schemas.
  (cd "$node_dir" && npm install --silent --no-audit --no-fund --omit=optional \
      @anthropic-ai/claude-agent-sdk zod >&2) \
    || fail "step 'npm install @anthropic-ai/claude-agent-sdk zod' failed"
  node_ready || fail "@anthropic-ai/claude-agent-sdk does not import after installing it"
fi
echo "TERN_SDK_PYTHON=$venv/bin/python"
echo "TERN_SDK_NODE_DIR=$node_dir"
