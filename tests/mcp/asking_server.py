"""A stdio MCP server that asks things of its client, for tern's tests of
elicitation, sampling and progress. Plain JSON-RPC (no SDK), so it can also
send what the SDK would refuse to: a form whose schema is not an object.

    python3 asking_server.py LOG

Writes the client's initialize capabilities to LOG (one JSON line). Tools:
  form      elicitation/create with name (default "Ada"), age (integer,
            required, no default), color (enum, default "green")
  bad_form  elicitation/create whose requestedSchema is a string
  sample    sampling/createMessage ("say hi", maxTokens 50)
  slow      two notifications/progress (1/2 "halfway", 2/2), then "done"
Each tool's text says what came back: "action=… content=…", "sampled=…" or
"error=…".
"""
import json
import sys
import time

LOG = sys.argv[1]
pending_id = [0]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def ask(method, params):
    """Sends a request and waits for its answer (other messages ignored)."""
    pending_id[0] += 1
    rid = "srv-%d" % pending_id[0]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        msg = read()
        if msg.get("id") == rid and "method" not in msg:
            return msg


def text(t):
    return {"content": [{"type": "text", "text": t}]}


def outcome(answer):
    if "error" in answer:
        return "error=" + answer["error"].get("message", "")
    return None


TOOLS = [
    {"name": n, "description": n, "inputSchema": {"type": "object", "properties": {}}}
    for n in ["form", "bad_form", "sample", "slow"]
]

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "default": "Ada"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
    },
    "required": ["age"],
}


def call(name, meta):
    if name == "form":
        a = ask("elicitation/create", {"message": "Tell me about you", "requestedSchema": FORM})
        r = a.get("result", {})
        return outcome(a) or "action=%s content=%s" % (
            r.get("action"), json.dumps(r.get("content"), sort_keys=True))
    if name == "bad_form":
        a = ask("elicitation/create", {"message": "broken", "requestedSchema": "not a schema"})
        return outcome(a) or "unexpected " + json.dumps(a)
    if name == "sample":
        a = ask("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "say hi"}}],
            "systemPrompt": "You are terse.", "maxTokens": 50})
        return outcome(a) or "sampled=" + a["result"]["content"]["text"]
    if name == "slow":
        token = meta.get("progressToken")
        for i, m in [(1, "halfway"), (2, None)]:
            p = {"progressToken": token, "progress": i, "total": 2}
            if m:
                p["message"] = m
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": p})
            time.sleep(0.3)
        return "done token=%s" % json.dumps(token)
    return "error=unknown tool"


while True:
    msg = read()
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue
    if method == "initialize":
        with open(LOG, "a") as f:
            f.write(json.dumps(msg["params"].get("capabilities", {})) + "\n")
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "asking", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        p = msg["params"]
        send({"jsonrpc": "2.0", "id": mid, "result": text(call(p["name"], p.get("_meta", {})))})
    else:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
