#!/usr/bin/env bash
# Provisions the official OTLP schema for tests/it/otel.rs, by package
# name: opentelemetry-proto (through pip, with protobuf's json_format) in
# a private virtual environment. The test receiver (tests/otel/receiver.py)
# parses every export with it. Prints the interpreter the tests use, and
# nothing else on stdout:
#   TERN_OTEL_PYTHON=<venv>/bin/python
set -euo pipefail

fail() { echo "ci/otel.sh: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo

venv=${TERN_OTEL_VENV:-$HOME/.cache/tern-otel-venv}
check='import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2, google.protobuf.json_format'
if ! "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
  echo "ci/otel.sh: installing opentelemetry-proto into $venv" >&2
  python3 -m venv "$venv" 2>/dev/null || {
    # Debian splits venv out of python3.
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq python3-venv >/dev/null; } \
      || fail "step 'apt-get install python3-venv' failed"
    python3 -m venv "$venv" || fail "step 'python3 -m venv $venv' failed"
  }
  "$venv/bin/python" -m pip install -q --upgrade pip >&2 || fail "step 'pip install --upgrade pip' failed"
  "$venv/bin/python" -m pip install -q opentelemetry-proto >&2 || fail "step 'pip install opentelemetry-proto' failed"
  "$venv/bin/python" -c "$check" || fail "opentelemetry-proto does not import after installing it"
fi
echo "TERN_OTEL_PYTHON=$venv/bin/python"
