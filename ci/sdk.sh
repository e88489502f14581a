#!/usr/bin/env bash
# Provisions the official Python Agent SDK (package claude-agent-sdk, through
# pip) in a private virtual environment for tests/sdk.rs, and prints the
# interpreter the tests use, and nothing else on stdout:
#   TERN_SDK_PYTHON=<venv>/bin/python
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
echo "TERN_SDK_PYTHON=$venv/bin/python"
