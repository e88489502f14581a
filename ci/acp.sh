#!/usr/bin/env bash
# Provisions the official Agent Client Protocol client library for
# tests/it/acp.rs, by package name: @agentclientprotocol/sdk through npm
# (run with the machine's node) in a cache folder. Prints the folder the
# tests use, and nothing else on stdout:
#   TERN_ACP_NODE_DIR=<dir>   (holds node_modules/@agentclientprotocol/sdk)
set -euo pipefail

fail() { echo "ci/acp.sh: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo

node_dir=${TERN_ACP_NODE_DIR:-$HOME/.cache/tern-acp-node}
node_ready() {
  (cd "$node_dir" && node -e 'import("@agentclientprotocol/sdk")') >/dev/null 2>&1
}
if ! node_ready; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq nodejs npm >/dev/null; } \
      || fail "step 'apt-get install nodejs npm' failed"
  fi
  echo "ci/acp.sh: installing @agentclientprotocol/sdk into $node_dir" >&2
  mkdir -p "$node_dir" || fail "step 'mkdir $node_dir' failed"
  [ -f "$node_dir/package.json" ] || echo '{"name":"tern-acp-tests","private":true}' >"$node_dir/package.json" \
    || fail "step 'write $node_dir/package.json' failed"
  (cd "$node_dir" && npm install --silent --no-audit --no-fund @agentclientprotocol/sdk >&2) \
    || fail "step 'npm install @agentclientprotocol/sdk' failed"
  node_ready || fail "@agentclientprotocol/sdk does not import after installing it"
fi
echo "TERN_ACP_NODE_DIR=$node_dir"
