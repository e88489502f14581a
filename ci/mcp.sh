#!/usr/bin/env bash
# Installs the real MCP servers tests/it/mcp.rs talks to, by package name through
# the machine's own package clients:
#   npm:  @modelcontextprotocol/server-everything, @modelcontextprotocol/server-filesystem
#   pip:  mcp-server-time, mcp-server-git (in a private virtual environment)
#   npm:  @modelcontextprotocol/conformance, the official conformance suite,
#         with node@22 (the suite needs Node 22; the system's may be older)
#         in a prefix of their own
# into $TERN_MCP_DIR (default ~/.cache/tern-mcp). Prints TERN_MCP_DIR=… and
# nothing else on stdout; every step checks its result and names itself.
set -euo pipefail

fail() { echo "ci/mcp.sh: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo

dir=${TERN_MCP_DIR:-$HOME/.cache/tern-mcp}
mkdir -p "$dir" || fail "cannot create $dir"
npm_bins=(mcp-server-everything mcp-server-filesystem)
npm_ready() { for b in "${npm_bins[@]}"; do [ -x "$dir/node_modules/.bin/$b" ] || return 1; done; }
if ! npm_ready; then
  if ! command -v npm >/dev/null 2>&1; then
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq nodejs npm >/dev/null; } \
      || fail "step 'apt-get install nodejs npm' failed"
  fi
  echo "ci/mcp.sh: installing the npm MCP servers" >&2
  npm install --prefix "$dir" --silent --no-audit --no-fund \
    @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem >&2 \
    || fail "step 'npm install @modelcontextprotocol/server-everything server-filesystem' failed"
  npm_ready || fail "step 'npm install': ${npm_bins[*]} missing in $dir/node_modules/.bin"
fi
py_ready() { [ -x "$dir/venv/bin/mcp-server-time" ] && [ -x "$dir/venv/bin/mcp-server-git" ]; }
if ! py_ready; then
  echo "ci/mcp.sh: installing the Python MCP servers" >&2
  python3 -m venv "$dir/venv" 2>/dev/null || {
    # Debian splits venv out of python3.
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq python3-venv >/dev/null; } \
      || fail "step 'apt-get install python3-venv' failed"
    python3 -m venv "$dir/venv" || fail "step 'python3 -m venv $dir/venv' failed"
  }
  "$dir/venv/bin/python" -m pip install -q mcp-server-time mcp-server-git >&2 \
    || fail "step 'pip install mcp-server-time mcp-server-git' failed"
  py_ready || fail "step 'pip install': mcp-server-time or mcp-server-git missing in $dir/venv/bin"
fi
conf="$dir/conformance"
conf_ready() {
  [ -f "$conf/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] \
    && [ -x "$conf/node_modules/node/bin/node" ] \
    && "$conf/node_modules/node/bin/node" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)'
}
if ! conf_ready; then
  echo "ci/mcp.sh: installing the MCP conformance suite and Node 22" >&2
  mkdir -p "$conf" || fail "cannot create $conf"
  npm install --prefix "$conf" --silent --no-audit --no-fund \
    @modelcontextprotocol/conformance@0.1.16 node@22 >&2 \
    || fail "step 'npm install @modelcontextprotocol/conformance@0.1.16 node@22' failed"
  conf_ready || fail "step 'npm install': the conformance suite or Node 22 is missing in $conf"
fi
echo "TERN_MCP_DIR=$dir"
