#!/usr/bin/env bash
# The client the official MCP conformance suite runs (tests/it/mcp_conformance.rs):
# the suite starts its test server for one scenario and runs this script with
# the server's URL as the last argument. It does what a user would: writes
# the server into an --mcp-config (with the OAuth client the scenario hands
# out in MCP_CONFORMANCE_CONTEXT, as a user would copy it from their
# provider), signs in when `tern mcp list` says the server needs it (the
# "browser" follows the authorization address with curl), then runs one
# `tern -p` turn in which the stand-in model (ANTHROPIC_BASE_URL, started
# by the test) calls every tool the server offers.
#
# Needs TERN_BIN and ANTHROPIC_BASE_URL; HOME is a scratch folder of its own
# so no sign-in leaks between scenarios.
set -uo pipefail
url="${*: -1}"
: "${TERN_BIN:?}" "${ANTHROPIC_BASE_URL:?}"
work=$(mktemp -d "${TMPDIR:-/tmp}/tern-conformance.XXXXXX")
export HOME="$work/home" ANTHROPIC_API_KEY=sk-conformance
mkdir -p "$HOME"
cd "$work" || exit 1
echo "scenario ${MCP_CONFORMANCE_SCENARIO:-?} at $url" >&2

# The server's entry: its URL, and the client the scenario registered for
# us, if any (a secret is passed by environment variable, never written
# into the config).
cfg=$(python3 - "$url" "$work" <<'EOF'
import json, os, sys
url, work = sys.argv[1], sys.argv[2]
ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
server = {"type": "http", "url": url}
oauth = {}
if ctx.get("client_id"):
    oauth["clientId"] = ctx["client_id"]
if ctx.get("client_secret"):
    oauth["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
if ctx.get("private_key_pem"):
    key = os.path.join(work, "client-key.pem")
    with open(key, "w") as f:
        f.write(ctx["private_key_pem"])
    oauth["privateKeyFile"] = key
if "client-credentials" in os.environ.get("MCP_CONFORMANCE_SCENARIO", ""):
    oauth["grant"] = "client_credentials"
if oauth:
    server["oauth"] = oauth
print(json.dumps({"mcpServers": {"s": server}}))
EOF
) || exit 1
CONFORMANCE_CLIENT_SECRET=$(python3 -c 'import json,os; print(json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}").get("client_secret", ""))')
export CONFORMANCE_CLIENT_SECRET
echo "config: $cfg" >&2

# The browser: follows the authorization address to tern's loopback callback.
cat >"$work/browser" <<'EOF'
#!/bin/sh
exec curl -s -L -o /dev/null "$1"
EOF
chmod +x "$work/browser"
export BROWSER="$work/browser"
# With nobody to answer a server's form, take the defaults its schema
# gives (without this, tern -p declines).
export TERN_MCP_ELICITATION=accept-defaults

"$TERN_BIN" mcp list --mcp-config "$cfg" >"$work/list.txt" 2>&1
cat "$work/list.txt" >&2
if grep -q needs-auth "$work/list.txt"; then
  timeout 60 "$TERN_BIN" mcp login s --mcp-config "$cfg" </dev/null >&2 2>&1
  echo "tern mcp login exited $?" >&2
fi
timeout 90 "$TERN_BIN" -p "Call every tool you have." --mcp-config "$cfg" \
  --permission-mode bypassPermissions --output-format stream-json --verbose </dev/null
