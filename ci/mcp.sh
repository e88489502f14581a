#!/usr/bin/env bash
# Installs the real MCP servers tests/mcp.rs talks to, from the registries:
#   npm:  @modelcontextprotocol/server-everything, @modelcontextprotocol/server-filesystem
#   PyPI: mcp-server-time, mcp-server-git (in a private virtual environment)
# into $TERN_MCP_DIR (default ~/.cache/tern-mcp), and prints TERN_MCP_DIR=….
set -euo pipefail

dir=${TERN_MCP_DIR:-$HOME/.cache/tern-mcp}
mkdir -p "$dir"
if [ ! -x "$dir/node_modules/.bin/mcp-server-everything" ] || [ ! -x "$dir/node_modules/.bin/mcp-server-filesystem" ]; then
  command -v npm >/dev/null 2>&1 || {
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq nodejs npm >/dev/null
  }
  npm install --prefix "$dir" --silent --no-audit --no-fund \
    @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem >/dev/null
fi
if [ ! -x "$dir/venv/bin/mcp-server-time" ] || [ ! -x "$dir/venv/bin/mcp-server-git" ]; then
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install -q mcp-server-time mcp-server-git
fi
echo "TERN_MCP_DIR=$dir"
