#!/usr/bin/env bash
# For trying tern on a box with no model server and no API key: installs
# (once, through ci/llama.sh) and starts llama.cpp's llama-server with SmolLM2-135M
# on 127.0.0.1:${TERN_LOCAL_PORT:-8080}, where tern finds it by itself.
#   bash ci/local-server.sh          start it (in the background) and wait until it answers
#   bash ci/local-server.sh stop     stop it
# SmolLM2-135M is tiny: it answers, but it is no coding model. Point tern at
# a real one (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, or a bigger local server).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "ci/local-server.sh: $*" >&2; exit 1; }

port=${TERN_LOCAL_PORT:-8080}
state=${TERN_LLAMA_DIR:-$HOME/.cache/tern-llama}
pidfile="$state/server-$port.pid"
if [ "${1:-}" = stop ]; then
  [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null && echo "stopped the server on :$port"
  rm -f "$pidfile"
  exit 0
fi
if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "llama-server already runs on 127.0.0.1:$port (pid $(cat "$pidfile"))"
  exit 0
fi
out=$(bash ci/llama.sh) || fail "ci/llama.sh failed (see above)"
server=$(sed -n 's/^TERN_LLAMA_SERVER=//p' <<<"$out")
model=$(sed -n 's/^TERN_LLAMA_MODEL=//p' <<<"$out")
[ -x "$server" ] && [ -f "$model" ] || fail "ci/llama.sh gave no server or model"
nohup "$server" -m "$model" -c 8192 --host 127.0.0.1 --port "$port" -np 1 >"$state/server-$port.log" 2>&1 &
echo $! >"$pidfile"
for _ in $(seq 300); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null; then
    echo "llama-server with $(basename "$model") answers on 127.0.0.1:$port (log: $state/server-$port.log)"
    exit 0
  fi
  kill -0 "$(cat "$pidfile")" 2>/dev/null || fail "llama-server exited; see $state/server-$port.log"
  sleep 0.2
done
fail "llama-server did not answer on :$port within 60 s; see $state/server-$port.log"
