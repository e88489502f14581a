#!/usr/bin/env bash
# Provisions the validators of the fleet examples (tests/it/fleet.rs), by
# package name: check-jsonschema (GitHub's workflow schema ships inside it)
# and kubernetes-validate (the Kubernetes API schemas ship inside it), in a
# private virtual environment; neither reaches the network when it runs.
# Prints the folder of their commands, and nothing else on stdout:
#   TERN_FLEET_BIN=<venv>/bin
set -euo pipefail

fail() { echo "ci/fleet.sh: $*" >&2; exit 1; }
venv=${TERN_FLEET_VENV:-$HOME/.cache/tern-fleet-venv}
ready() {
  "$venv/bin/check-jsonschema" --version >/dev/null 2>&1 \
    && "$venv/bin/kubernetes-validate" --version >/dev/null 2>&1
}
if ! ready; then
  echo "ci/fleet.sh: installing check-jsonschema and kubernetes-validate into $venv" >&2
  python3 -m venv "$venv" || fail "step 'python3 -m venv $venv' failed (ci/sdk.sh installs python3-venv)"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2 || fail "step 'pip install --upgrade pip' failed"
  "$venv/bin/python" -m pip install -q check-jsonschema kubernetes-validate >&2 \
    || fail "step 'pip install check-jsonschema kubernetes-validate' failed"
  ready || fail "the validators do not run after installing them"
fi
echo "TERN_FLEET_BIN=$venv/bin"
