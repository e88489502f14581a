"""A scripted MCP server over stdio for the failure-mode tests: plain
JSON-RPC, no dependencies. The mode is the first argument:

  changing  offers add_tool; calling it announces tools/list_changed (just
            before its result) and new_tool appears in the next tools/list
  dying     offers crash; calling it makes the server exit without answering
  silent    never answers initialize
  noisy     writes a line that is not JSON before every answer, and offers
            huge (a 300 000 character result)
  slow      offers wait, which never answers; a notifications/cancelled it
            receives is appended to the file named by SCRIPTED_LOG
  many      offers twenty tools about the subject named by the second
            argument (tracker, calendar or files), each with a described
            three-field schema, as a real server's would be; a call answers
            with the tool's name and its arguments
  witness   writes its environment as JSON to started.json in its working
            directory when it starts, and offers peek (readOnlyHint: true),
            which creates the file peeked there

Any further arguments are ignored (tests pass a marker to find leftovers).
"""

import json
import os
import sys

mode = sys.argv[1]
added = False

if mode == "witness":
    with open("started.json", "w") as f:
        json.dump(dict(os.environ), f)


def send(msg):
    if mode == "noisy":
        sys.stdout.write("this is not json-rpc\n")
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


SUBJECTS = {
    "tracker": ["issue", "comment", "label", "milestone"],
    "calendar": ["event", "invite", "reminder", "room"],
    "files": ["document", "folder", "share", "revision"],
}
VERBS = ["create", "get", "list", "update", "delete"]


def many_tools():
    subject = sys.argv[2] if len(sys.argv) > 2 else "tracker"
    out = []
    for noun in SUBJECTS.get(subject, SUBJECTS["tracker"]):
        for verb in VERBS:
            out.append({
                "name": f"{verb}_{noun}",
                "description": f"{verb.capitalize()} a {noun} in the {subject} service. "
                               f"Use this when the user asks to {verb} a {noun}; the answer "
                               f"describes the {noun} as the service stores it.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": f"The {noun}'s identifier, as the {subject} service shows it."},
                        "title": {"type": "string", "description": f"A short title for the {noun}, at most 200 characters."},
                        "notify": {"type": "boolean", "description": "Whether the people following it are told."},
                    },
                    "required": ["id"],
                },
            })
    return out


def tools():
    if mode == "many":
        return many_tools()
    if mode == "changing":
        out = [{"name": "add_tool", "description": "adds a tool", "inputSchema": {"type": "object"}}]
        if added:
            out.append({"name": "new_tool", "description": "the added tool",
                        "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}})
        return out
    if mode == "dying":
        return [{"name": "crash", "description": "exits", "inputSchema": {"type": "object"}}]
    if mode == "slow":
        return [{"name": "wait", "description": "never answers", "inputSchema": {"type": "object"}}]
    if mode == "witness":
        return [{"name": "peek", "description": "says it only reads", "inputSchema": {"type": "object"},
                 "annotations": {"readOnlyHint": True}}]
    return [{"name": "huge", "description": "a big result", "inputSchema": {"type": "object"}}]


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        if method == "notifications/cancelled" and os.environ.get("SCRIPTED_LOG"):
            with open(os.environ["SCRIPTED_LOG"], "a") as log:
                log.write(json.dumps(msg) + "\n")
        continue
    if method == "initialize":
        if mode == "silent":
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "scripted-" + mode, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "crash":
            sys.stderr.write("crashing on purpose\n")
            sys.exit(3)
        if name == "add_tool":
            added = True
            # Announced before the result, so the change is known when
            # the caller takes its next step.
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "added"}]}})
        elif name == "new_tool":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "new tool works"}]}})
        elif name == "wait":
            pass
        elif name == "peek":
            open("peeked", "w").close()
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "peeked"}]}})
        elif mode == "many":
            text = "called " + name + " with " + json.dumps(msg["params"].get("arguments", {}), sort_keys=True)
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
        elif name == "huge":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "h" * 300000}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + str(method)}})
