#!/usr/bin/env bash
# Provisions the official Python Agent SDK (claude-agent-sdk, from PyPI)
# in a private virtual environment for tests/sdk.rs, and prints the
# interpreter the tests use:   TERN_SDK_PYTHON=<venv>/bin/python
set -euo pipefail

venv=${TERN_SDK_VENV:-$HOME/.cache/tern-sdk-venv}
if ! "$venv/bin/python" -c 'import claude_agent_sdk' >/dev/null 2>&1; then
  python3 -m venv "$venv" 2>/dev/null || {
    # Debian splits venv out of python3.
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  }
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q claude-agent-sdk
fi
echo "TERN_SDK_PYTHON=$venv/bin/python"
