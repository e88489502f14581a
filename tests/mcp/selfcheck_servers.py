"""Checks that the HTTP test servers behave as the Rust tests assume: standard
library only, a tool for people changing those servers, not part of CI.

    python3 tests/mcp/selfcheck_servers.py

Runs scripted_http.py in each mode (with the env knobs that matter), and
fast_server.py in stdio, sse and http if the venv of ci/mcp.sh exists
($TERN_MCP_DIR/venv, default ~/.cache/tern-mcp/venv). Ends with the line
'N passed, N failed' and exits non-zero if anything failed.
"""

import base64
import hashlib
import http.client
import json
import os
import secrets
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from urllib.parse import parse_qs, urlencode, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
VENV_PYTHON = os.path.join(os.environ.get("TERN_MCP_DIR") or os.path.expanduser("~/.cache/tern-mcp"),
                           "venv", "bin", "python")
ACCEPT_BOTH = "application/json, text/event-stream"

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"  ok    {name}")
    else:
        failed += 1
        print(f"  FAIL  {name}  {detail}")


# ----------------------------------------------------------------- processes

class Running:
    """A server process with its port, log file and scratch directory."""

    def __init__(self, argv, env=None, log=True):
        self.dir = tempfile.mkdtemp(prefix="tern-selfcheck-")
        self.port_file = os.path.join(self.dir, "port")
        self.log = os.path.join(self.dir, "log.jsonl") if log else None
        args = argv + [self.port_file] + ([self.log] if self.log else [])
        self.proc = subprocess.Popen(args, env={**os.environ, **(env or {})},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv} did not start: {self.proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        with open(self.port_file) as f:
            self.port = int(f.read())
        self.base = f"http://127.0.0.1:{self.port}"

    def requests(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def stop(self):
        self.proc.kill()  # only ever the process this object started
        self.proc.wait()
        err = self.proc.stderr.read().decode()
        if "Traceback" in err:
            check("server stderr has no traceback", False, err[-3000:])
        shutil.rmtree(self.dir, ignore_errors=True)
        return err


def scripted(mode, **env):
    return Running([sys.executable, os.path.join(HERE, "scripted_http.py"), mode], env)


# ---------------------------------------------------------------------- HTTP

def request(port, method, path, body=None, headers=None, timeout=10):
    """One request on a fresh connection: (status, headers lower-cased, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        body = body.encode()
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def sse_messages(raw):
    """The JSON data of every event in a complete SSE body."""
    out = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out


class Mcp:
    """A minimal streamable-HTTP client: POSTs JSON-RPC, remembers the session."""

    def __init__(self, port, path="/mcp", token=None):
        self.port, self.path, self.token = port, path, token
        self.session = None
        self.next_id = 0

    def headers(self):
        h = {"Accept": ACCEPT_BOTH, "MCP-Protocol-Version": "2025-06-18"}
        if self.session:
            h["Mcp-Session-Id"] = self.session
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def post(self, message):
        status, headers, body = request(self.port, "POST", self.path, message, self.headers())
        if "text/event-stream" in headers.get("content-type", ""):
            msgs = sse_messages(body)
            parsed = msgs if isinstance(message, list) else (msgs[-1] if msgs else None)
        else:
            parsed = json.loads(body) if body else None
        return status, headers, parsed

    def call(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        return self.post(msg)

    def notify(self, method):
        return self.post({"jsonrpc": "2.0", "method": method})

    def initialize(self, version="2025-06-18"):
        status, headers, answer = self.call("initialize", {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "selfcheck", "version": "0"}})
        self.session = headers.get("mcp-session-id")
        self.notify("notifications/initialized")
        return status, headers, answer


class Sse:
    """An open SSE response read event by event (comments are counted apart)."""

    def __init__(self, port, path, headers):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.conn.request("GET", path, headers=headers)
        # http.client forgets the socket of a Connection: close response;
        # keep it to set read timeouts.
        self.sock = self.conn.sock
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.comments = []

    def event(self, timeout=5):
        """The next event as {"id", "event", "data"}; None once the stream has ended."""
        self.sock.settimeout(timeout)
        fields, data = {}, []
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\r\n")
            if not line:
                if fields or data:
                    fields["data"] = "\n".join(data)
                    return fields
                continue
            if line.startswith(":"):
                self.comments.append(line)
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value

    def message(self, timeout=5):
        ev = self.event(timeout)
        return None if ev is None else json.loads(ev["data"])

    def close(self):
        self.resp.close()
        self.sock.close()
        self.conn.close()


def tool_text(answer):
    return answer["result"]["content"][0]["text"]


def section(title, fn):
    print(title)
    try:
        fn()
    except Exception:
        check(f"{title}: ran to the end", False, traceback.format_exc())


# --------------------------------------------------------------- streamable

def check_streamable():
    srv = scripted("streamable", SCRIPTED_DROP_GET_AFTER="3")
    try:
        c = Mcp(srv.port)
        status, headers, answer = c.initialize("2025-03-26")
        check("initialize answers 200 JSON", status == 200 and headers["content-type"] == "application/json")
        check("initialize sets Mcp-Session-Id", bool(c.session))
        check("protocolVersion echoes the asked one", answer["result"]["protocolVersion"] == "2025-03-26")
        check("serverInfo name", answer["result"]["serverInfo"]["name"] == "scripted-http-streamable")
        check("resources.subscribe advertised", answer["result"]["capabilities"]["resources"]["subscribe"] is True)
        _, _, odd = Mcp(srv.port).call("initialize", {"protocolVersion": "1999-01-01"})
        check("unknown protocolVersion gets 2025-06-18", odd["result"]["protocolVersion"] == "2025-06-18")
        status, _, body = request(srv.port, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                  {"Accept": ACCEPT_BOTH, "Mcp-Session-Id": c.session})
        check("notification answers 202 with empty body", status == 202 and body == b"")
        status, _, _ = request(srv.port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                               {"Accept": ACCEPT_BOTH})
        check("missing session header: 400", status == 400)
        status, _, body = request(srv.port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                                  {"Accept": ACCEPT_BOTH, "Mcp-Session-Id": "nope"})
        check("unknown session: 404 with a JSON-RPC error", status == 404 and "error" in json.loads(body))

        names = [t["name"] for t in c.call("tools/list")[2]["result"]["tools"]]
        check("tools before poke", names == ["echo", "poke", "touch"], names)
        check("echo", tool_text(c.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})[2]) == "echo: hi")
        _, _, p = c.call("prompts/get", {"name": "greet", "arguments": {"name": "Ada", "tone": "warm"}})
        check("prompts/get", p["result"]["messages"][0]["content"]["text"] == "Say hello to Ada in a warm tone.")
        _, _, p = c.call("prompts/get", {"name": "greet", "arguments": {}})
        check("prompts/get without a required argument: -32602", p["error"]["code"] == -32602)
        _, _, r = c.call("resources/read", {"uri": "memo://one"})
        check("resources/read", r["result"]["contents"][0]["text"] == "memo one body")
        _, _, r = c.call("resources/read", {"uri": "memo://two"})
        check("unknown resource: -32002", r["error"]["code"] == -32002)
        check("unknown method: -32601", c.call("nope/nope")[2]["error"]["code"] == -32601)
        _, _, both = c.post([{"jsonrpc": "2.0", "id": 100, "method": "ping"},
                             {"jsonrpc": "2.0", "method": "notifications/whatever"},
                             {"jsonrpc": "2.0", "id": 101, "method": "tools/list"}])
        check("batch answers every request", [a["id"] for a in both] == [100, 101])

        # The GET stream: poke's notifications arrive there, not in the POST answer.
        get_headers = {"Accept": "text/event-stream", "Mcp-Session-Id": c.session}
        stream = Sse(srv.port, "/mcp", get_headers)
        check("GET stream opens", stream.status == 200 and stream.headers["content-type"] == "text/event-stream")
        _, _, poke = c.call("tools/call", {"name": "poke", "arguments": {}})
        check("poke answers poked", tool_text(poke) == "poked")
        e1, e2 = stream.event(), stream.event()
        check("list_changed on the GET stream, id 1",
              e1["id"] == "1" and json.loads(e1["data"])["method"] == "notifications/tools/list_changed")
        check("log message on the GET stream, id 2",
              e2["id"] == "2" and json.loads(e2["data"])["params"] == {"level": "info", "data": "poked"})
        names = [t["name"] for t in c.call("tools/list")[2]["result"]["tools"]]
        check("fresh listed after poke", "fresh" in names)
        check("fresh callable", tool_text(c.call("tools/call", {"name": "fresh", "arguments": {}})[2]) == "fresh tool")
        check("subscribe answers {}", c.call("resources/subscribe", {"uri": "memo://one"})[2]["result"] == {})
        c.call("tools/call", {"name": "touch", "arguments": {"uri": "memo://one"}})
        e3 = stream.event()
        check("resources/updated on the GET stream, id 3",
              e3["id"] == "3" and json.loads(e3["data"])["params"] == {"uri": "memo://one"})
        check("stream dropped after 3 events", stream.event() is None)
        stream.close()

        # While no stream is open, events wait; a Last-Event-ID replays the rest.
        c.call("tools/call", {"name": "touch", "arguments": {"uri": "memo://one"}})
        c.call("tools/call", {"name": "touch", "arguments": {"uri": "memo://other"}})  # not subscribed: no event
        resumed = Sse(srv.port, "/mcp", {**get_headers, "Last-Event-ID": "1"})
        ids = [resumed.event()["id"] for _ in range(3)]
        check("Last-Event-ID: 1 replays 2, 3, then the queued 4", ids == ["2", "3", "4"], ids)
        check("replays count toward the drop", resumed.event() is None)
        resumed.close()
        logged = [r for r in srv.requests() if r["method"] == "GET"]
        check("the log shows last-event-id on the second GET",
              len(logged) == 2 and "last-event-id" not in logged[0]["headers"]
              and logged[1]["headers"].get("last-event-id") == "1")

        plain = Sse(srv.port, "/mcp", get_headers)
        c.call("resources/unsubscribe", {"uri": "memo://one"})
        c.call("tools/call", {"name": "touch", "arguments": {"uri": "memo://one"}})  # unsubscribed: nothing
        c.call("tools/call", {"name": "poke", "arguments": {}})
        e = plain.event()
        check("a fresh GET gets only undelivered events (5, not old ones)", e["id"] == "5", e)
        plain.sock.settimeout(5)
        t0 = time.monotonic()
        plain.event()  # 6, then the stream waits: a keepalive comes within ~2 s
        while not plain.comments and time.monotonic() - t0 < 5:
            plain.sock.settimeout(5)
            line = plain.resp.readline()
            if line.startswith(b":"):
                plain.comments.append(line)
        check("keepalive comment on an idle stream", any(b"keepalive" in x for x in plain.comments))
        plain.close()

        status, _, _ = request(srv.port, "DELETE", "/mcp", headers={"Mcp-Session-Id": c.session})
        check("DELETE ends the session", status == 200)
        check("after DELETE: 404", c.call("ping")[0] == 404)
    finally:
        srv.stop()

    srv = scripted("streamable", SCRIPTED_SSE_POST="1")
    try:
        c = Mcp(srv.port)
        status, headers, answer = c.initialize()
        check("SCRIPTED_SSE_POST: initialize answered as an event stream",
              headers["content-type"] == "text/event-stream" and answer["result"]["serverInfo"] and c.session)
        _, headers, answer = c.call("tools/list")
        check("SCRIPTED_SSE_POST: tools/list as SSE", headers["content-type"] == "text/event-stream"
              and len(answer["result"]["tools"]) == 3)
        check("SCRIPTED_SSE_POST: notification still 202", c.notify("notifications/initialized")[0] == 202)
    finally:
        srv.stop()

    srv = scripted("streamable", SCRIPTED_GET_405="1")
    try:
        c = Mcp(srv.port)
        c.initialize()
        status, _, _ = request(srv.port, "GET", "/mcp", headers={"Accept": "text/event-stream",
                                                                 "Mcp-Session-Id": c.session})
        check("SCRIPTED_GET_405: GET answers 405", status == 405)
        check("SCRIPTED_GET_405: poke still answers", tool_text(c.call("tools/call", {"name": "poke"})[2]) == "poked")
    finally:
        srv.stop()


# ------------------------------------------------------------------- legacy

def check_legacy():
    srv = scripted("legacy", SCRIPTED_DROP_SSE_AFTER="5")
    try:
        status, _, body = request(srv.port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  {"Accept": ACCEPT_BOTH})
        check("POST /mcp: 405", status == 405 and body)
        status, _, _ = request(srv.port, "POST", "/sse", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        check("POST /sse: 405", status == 405)

        stream = Sse(srv.port, "/sse", {"Accept": "text/event-stream"})
        ev = stream.event()
        check("first event is endpoint with a relative URL",
              ev["event"] == "endpoint" and ev["data"].startswith("/messages?session_id="), ev)
        endpoint = ev["data"]

        def post(msg):
            return request(srv.port, "POST", endpoint, msg)

        status, _, body = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                           "clientInfo": {"name": "selfcheck", "version": "0"}}})
        check("POST to the endpoint: 202 Accepted", status == 202 and body == b"Accepted")
        answer = stream.message()
        check("the initialize answer arrives on the stream",
              answer["id"] == 1 and answer["result"]["protocolVersion"] == "2024-11-05"
              and answer["result"]["serverInfo"]["name"] == "scripted-http-legacy")
        check("notification: 202", post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202)
        post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "poke", "arguments": {}}})
        got = [stream.message() for _ in range(3)]
        check("poke: list_changed, log message, then the answer on the stream",
              [m.get("method") for m in got[:2]] == ["notifications/tools/list_changed", "notifications/message"]
              and got[2]["id"] == 2 and tool_text(got[2]) == "poked")
        post({"jsonrpc": "2.0", "id": 3, "method": "prompts/list"})
        check("fifth message event arrives", stream.message()["result"]["prompts"][0]["name"] == "greet")
        check("stream dropped after 5 message events", stream.event() is None)
        stream.close()
        time.sleep(0.2)
        check("its endpoint is gone: 404", post({"jsonrpc": "2.0", "id": 4, "method": "ping"})[0] == 404)
        status, _, _ = request(srv.port, "POST", "/messages?session_id=nope", {"jsonrpc": "2.0", "id": 1,
                                                                              "method": "ping"})
        check("unknown session: 404", status == 404)

        again = Sse(srv.port, "/mcp", {"Accept": "text/event-stream"})
        ev = again.event()
        check("GET /mcp with Accept text/event-stream acts as /sse",
              ev["event"] == "endpoint" and ev["data"] != endpoint)
        request(srv.port, "POST", ev["data"], {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        check("a new session answers", again.message() == {"jsonrpc": "2.0", "id": 1, "result": {}})
        t0 = time.monotonic()
        again.sock.settimeout(4)
        line = again.resp.readline()
        check("keepalive comment", line.startswith(b": keepalive") and time.monotonic() - t0 < 3.5, line)
        again.close()
        status, _, _ = request(srv.port, "GET", "/mcp")
        check("GET /mcp without Accept text/event-stream: 405", status == 405)
    finally:
        srv.stop()


# -------------------------------------------------------------------- oauth

def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def form(port, fields):
    status, _, body = request(port, "POST", "/auth/token", urlencode(fields),
                              {"Content-Type": "application/x-www-form-urlencoded"})
    return status, json.loads(body)


def authorize(srv, client_id, redirect, challenge, **extra):
    q = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
         "code_challenge": challenge, "code_challenge_method": "S256", "state": "st-1",
         "resource": srv.base + "/mcp", "scope": "mcp", **extra}
    q = {k: v for k, v in q.items() if v is not None}
    return request(srv.port, "GET", "/auth/authorize?" + urlencode(q))


def code_from(headers):
    return {k: v[0] for k, v in parse_qs(urlsplit(headers["location"]).query).items()}


def check_oauth():
    srv = scripted("oauth", SCRIPTED_REQUIRE_RESOURCE="1")
    try:
        status, headers, body = request(srv.port, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                        {"Accept": ACCEPT_BOTH})
        expected = f'Bearer resource_metadata="{srv.base}/.well-known/oauth-protected-resource", scope="mcp"'
        check("no token: 401 with the resource_metadata challenge",
              status == 401 and headers.get("www-authenticate") == expected
              and json.loads(body) == {"error": "invalid_token"}, headers)
        _, _, body = request(srv.port, "GET", "/.well-known/oauth-protected-resource/mcp")
        prm = json.loads(body)
        check("protected resource metadata", prm["resource"] == srv.base + "/mcp"
              and prm["authorization_servers"] == [srv.base + "/auth"])
        _, _, body = request(srv.port, "GET", "/.well-known/oauth-authorization-server/auth")
        meta = json.loads(body)
        check("AS metadata by path insertion", meta["issuer"] == srv.base + "/auth"
              and meta["code_challenge_methods_supported"] == ["S256"]
              and meta["registration_endpoint"] == srv.base + "/auth/register")
        _, _, body = request(srv.port, "GET", "/auth/.well-known/openid-configuration")
        check("AS metadata at the OpenID path too", json.loads(body) == meta)

        redirect = "http://127.0.0.1:45678/callback"
        status, _, body = request(srv.port, "POST", "/auth/register", {"redirect_uris": []})
        check("register without redirect_uris: 400", status == 400)
        status, _, body = request(srv.port, "POST", "/auth/register",
                                  {"redirect_uris": [redirect], "client_name": "selfcheck",
                                   "grant_types": ["authorization_code", "refresh_token"]})
        reg = json.loads(body)
        check("register: 201 with a client_id", status == 201 and reg["client_id"]
              and reg["client_name"] == "selfcheck" and reg["token_endpoint_auth_method"] == "none")
        client = reg["client_id"]

        verifier, challenge = pkce()
        status, _, body = authorize(srv, client, redirect, challenge, code_challenge_method="plain")
        check("authorize with plain: 400 naming the check", status == 400 and b"code_challenge_method" in body)
        status, _, body = authorize(srv, client, redirect, challenge, resource=None)
        check("authorize without resource (required): 400", status == 400 and b"resource" in body)
        status, _, body = authorize(srv, client, "http://127.0.0.1:1/other", challenge)
        check("authorize with an unregistered redirect: 400", status == 400 and b"redirect_uri" in body)
        status, headers, _ = authorize(srv, client, redirect, challenge)
        got = code_from(headers)
        check("authorize: 302 to the redirect with code and state",
              status == 302 and headers["location"].startswith(redirect + "?") and got["state"] == "st-1")

        base_fields = {"grant_type": "authorization_code", "redirect_uri": redirect, "client_id": client,
                       "resource": srv.base + "/mcp"}
        status, err = form(srv.port, {**base_fields, "code": got["code"], "code_verifier": "wrong"})
        check("token with a wrong verifier: invalid_grant", status == 400 and err["error"] == "invalid_grant")
        status, err = form(srv.port, {**base_fields, "code": got["code"], "code_verifier": verifier})
        check("the code was single-use", status == 400 and err["error"] == "invalid_grant")
        _, headers, _ = authorize(srv, client, redirect, challenge)
        code = code_from(headers)["code"]
        status, err = form(srv.port, {**base_fields, "client_id": "stranger", "code": code, "code_verifier": verifier})
        check("unknown client: invalid_client", err == {"error": "invalid_client", "error_description": "unknown client_id"})
        status, tok = form(srv.port, {**base_fields, "code": code, "code_verifier": verifier})
        check("token with PKCE: 200 Bearer with refresh", status == 200 and tok["token_type"] == "Bearer"
              and tok["expires_in"] == 3600 and tok["refresh_token"] and tok["scope"] == "mcp", tok)

        c = Mcp(srv.port, token=tok["access_token"])
        status, _, answer = c.initialize()
        check("the bearer token opens /mcp", status == 200 and answer["result"]["serverInfo"]["name"]
              == "scripted-http-oauth" and c.session)
        stream = Sse(srv.port, "/mcp", {**c.headers(), "Accept": "text/event-stream"})
        c.call("tools/call", {"name": "poke", "arguments": {}})
        check("GET stream works with the token", json.loads(stream.event()["data"])["method"]
              == "notifications/tools/list_changed")
        stream.close()
        c.token = "bogus"
        check("a wrong token: 401", c.call("ping")[0] == 401)

        refresh_fields = {"grant_type": "refresh_token", "client_id": client, "resource": srv.base + "/mcp"}
        status, tok2 = form(srv.port, {**refresh_fields, "refresh_token": tok["refresh_token"]})
        check("refresh: new tokens", status == 200 and tok2["access_token"] != tok["access_token"]
              and tok2["refresh_token"] != tok["refresh_token"])
        status, err = form(srv.port, {**refresh_fields, "refresh_token": tok["refresh_token"]})
        check("the old refresh token is dead (rotation)", status == 400 and err["error"] == "invalid_grant")
        c.token = tok2["access_token"]
        check("the refreshed token works", c.call("ping")[2]["result"] == {})
        _, _, body = request(srv.port, "GET", "/stats")
        stats = json.loads(body)
        check("stats", stats == {"tokens_issued": 2, "refreshes": 1, "registrations": 1, "authorize_calls": 5},
              stats)
        logged = srv.requests()
        check("/stats is not logged", not any(r["path"] == "/stats" for r in logged))
        check("the log shows the bearer token", any(r["headers"].get("authorization") == "Bearer " + tok2["access_token"]
                                                    for r in logged))
        token_posts = [r for r in logged if r["path"] == "/auth/token"]
        check("token requests are logged with their form body",
              token_posts and "grant_type=refresh_token" in token_posts[-1]["body"])
    finally:
        srv.stop()

    srv = scripted("oauth", SCRIPTED_TOKEN_TTL="1", SCRIPTED_NO_REGISTRATION="1")
    try:
        _, _, body = request(srv.port, "GET", "/.well-known/oauth-authorization-server/auth")
        check("SCRIPTED_NO_REGISTRATION: no registration_endpoint", "registration_endpoint" not in json.loads(body))
        status, _, _ = request(srv.port, "POST", "/auth/register", {"redirect_uris": ["http://127.0.0.1:1/cb"]})
        check("SCRIPTED_NO_REGISTRATION: register is 404", status == 404)
        verifier, challenge = pkce()
        redirect = "http://localhost:39999/cb"
        status, headers, _ = authorize(srv, "preset-client", redirect, challenge, resource=None, state=None)
        check("preset-client with a loopback redirect, no state, no resource",
              status == 302 and "state" not in code_from(headers))
        status, _, _ = authorize(srv, "preset-client", "https://example.com/cb", challenge)
        check("preset-client with a non-loopback redirect: 400", status == 400)
        status, tok = form(srv.port, {"grant_type": "authorization_code", "code": code_from(headers)["code"],
                                      "redirect_uri": redirect, "client_id": "preset-client",
                                      "code_verifier": verifier})
        check("SCRIPTED_TOKEN_TTL=1: expires_in 1", status == 200 and tok["expires_in"] == 1)
        c = Mcp(srv.port, token=tok["access_token"])
        check("fresh token works", c.initialize()[0] == 200)
        time.sleep(1.3)
        status, headers, _ = c.call("ping")
        check("expired token: 401 with the challenge", status == 401 and "resource_metadata" in
              headers.get("www-authenticate", ""))
        status, tok2 = form(srv.port, {"grant_type": "refresh_token", "refresh_token": tok["refresh_token"],
                                       "client_id": "preset-client"})
        c.token = tok2["access_token"]
        check("refresh after expiry works, the session lives on", status == 200 and c.call("ping")[0] == 200)
    finally:
        srv.stop()

    srv = scripted("oauth", SCRIPTED_REFRESH_FAILS="1")
    try:
        verifier, challenge = pkce()
        redirect = "http://127.0.0.1:39999/cb"
        _, headers, _ = authorize(srv, "preset-client", redirect, challenge)
        _, tok = form(srv.port, {"grant_type": "authorization_code", "code": code_from(headers)["code"],
                                 "redirect_uri": redirect, "client_id": "preset-client", "code_verifier": verifier})
        status, err = form(srv.port, {"grant_type": "refresh_token", "refresh_token": tok["refresh_token"],
                                      "client_id": "preset-client"})
        check("SCRIPTED_REFRESH_FAILS: invalid_grant", status == 400 and err["error"] == "invalid_grant")
    finally:
        srv.stop()


# -------------------------------------------------------------- fast_server

def check_fast_results(call):
    """The tool, prompt and resource checks shared by fast_server's transports;
    `call(method, params)` returns the JSON-RPC answer."""
    names = sorted(t["name"] for t in call("tools/list", {})["result"]["tools"])
    check("tools", names == ["add", "pixel", "set_note", "tone"], names)
    added = call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})["result"]
    check("add", added["content"][0]["text"] == "5", added)
    audio = call("tools/call", {"name": "tone", "arguments": {}})["result"]["content"]
    wav = base64.b64decode(audio[0]["data"])
    check("tone: audio/wav, RIFF WAVE, 800 16-bit samples",
          audio[0]["type"] == "audio" and audio[0]["mimeType"] == "audio/wav" and wav[:4] == b"RIFF"
          and wav[8:12] == b"WAVE" and struct.unpack("<I", wav[40:44])[0] == 1600 and len(wav) == 1644, audio[0].keys())
    blobs = call("tools/call", {"name": "pixel", "arguments": {}})["result"]["content"]
    png = base64.b64decode(blobs[0]["resource"]["blob"])
    idat = png[33 + 8: 33 + 8 + struct.unpack(">I", png[33:37])[0]]
    check("pixel: a PNG blob that inflates to one RGB pixel",
          blobs[0]["type"] == "resource" and blobs[0]["resource"]["uri"] == "blob://pixel.png"
          and blobs[0]["resource"]["mimeType"] == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n"
          and zlib.decompress(idat) == b"\x00\xff\x80\x00")
    check("pixel: 1000 bytes of octet-stream", blobs[1]["resource"]["mimeType"] == "application/octet-stream"
          and len(base64.b64decode(blobs[1]["resource"]["blob"])) == 1000)
    prompt = call("prompts/get", {"name": "review", "arguments": {"file": "a.rs"}})["result"]
    check("review prompt", prompt["messages"][0]["content"]["text"] == "Review a.rs with a focus on style.", prompt)
    listed = call("resources/list", {})["result"]["resources"]
    check("notes://today listed", listed[0]["uri"] == "notes://today" and listed[0]["mimeType"] == "text/plain")
    read = call("resources/read", {"uri": "notes://today"})["result"]["contents"][0]
    check("notes://today reads", read["text"] in ("buy milk", "call mum"), read)
    check("subscribe answers {}", call("resources/subscribe", {"uri": "notes://today"})["result"] == {})


def check_fast_server():
    if not os.path.exists(VENV_PYTHON):
        print(f"  (skipped: no {VENV_PYTHON})")
        return
    version = subprocess.run([VENV_PYTHON, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
                             capture_output=True, text=True).stdout.strip()
    print(f"  mcp {version}")
    script = os.path.join(HERE, "fast_server.py")

    print("fast_server stdio")
    proc = subprocess.Popen([VENV_PYTHON, script, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        ids = iter(range(1, 1000))

        def send(msg):
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()

        def call(method, params):
            mid = next(ids)
            send({"jsonrpc": "2.0", "id": mid, "method": method, "params": params})
            while True:
                msg = json.loads(proc.stdout.readline())
                if msg.get("id") == mid:
                    return msg
                call.seen.append(msg)

        call.seen = []
        init = call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "selfcheck", "version": "0"}})["result"]
        check("stdio: resources.subscribe advertised", init["capabilities"]["resources"]["subscribe"] is True, init)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        check_fast_results(call)
        answer = call("tools/call", {"name": "set_note", "arguments": {"text": "call mum"}})
        check("stdio: set_note sends resources/updated",
              {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://today"}}
              in call.seen and answer["result"]["content"][0]["text"] == "noted", call.seen)
        call("resources/unsubscribe", {"uri": "notes://today"})
        call.seen.clear()
        call("tools/call", {"name": "set_note", "arguments": {"text": "buy milk"}})
        check("stdio: no notification after unsubscribe", call.seen == [], call.seen)
    finally:
        proc.kill()
        proc.wait()

    print("fast_server http")
    srv = Running([VENV_PYTHON, script, "http"], log=False)
    try:
        c = Mcp(srv.port)
        status, headers, answer = c.initialize()
        check("http: initialize sets Mcp-Session-Id", status == 200 and bool(c.session))
        print(f"    (initialize answered as {headers.get('content-type')})")

        def call(method, params):
            return c.call(method, params)[2]

        check_fast_results(call)
        stream = Sse(srv.port, "/mcp", {**c.headers(), "Accept": "text/event-stream"})
        check("http: GET stream offered", stream.status == 200, stream.status)
        time.sleep(0.3)  # let the server attach the stream before it has something to say
        call("tools/call", {"name": "set_note", "arguments": {"text": "call mum"}})
        msg = stream.message(timeout=5)
        check("http: resources/updated on the GET stream",
              msg == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                      "params": {"uri": "notes://today"}}, msg)
        stream.close()
        status, _, _ = request(srv.port, "DELETE", "/mcp", headers=c.headers())
        print(f"    (DELETE answered {status})")
    finally:
        srv.stop()

    print("fast_server sse")
    srv = Running([VENV_PYTHON, script, "sse"], log=False)
    try:
        stream = Sse(srv.port, "/sse", {"Accept": "text/event-stream"})
        ev = stream.event()
        check("sse: endpoint event", ev["event"] == "endpoint" and "session_id=" in ev["data"], ev)
        print(f"    (endpoint: {ev['data']})")
        endpoint = ev["data"]
        ids = iter(range(1, 1000))
        seen = []

        def call(method, params):
            mid = next(ids)
            status, _, _ = request(srv.port, "POST", endpoint,
                                   {"jsonrpc": "2.0", "id": mid, "method": method, "params": params})
            assert status == 202, status
            while True:
                msg = stream.message()
                if msg.get("id") == mid:
                    return msg
                seen.append(msg)

        call("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                            "clientInfo": {"name": "selfcheck", "version": "0"}})
        request(srv.port, "POST", endpoint, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        check_fast_results(call)
        call("tools/call", {"name": "set_note", "arguments": {"text": "call mum"}})
        check("sse: resources/updated on the SSE stream",
              any(m.get("method") == "notifications/resources/updated" for m in seen), seen)
        stream.close()
    finally:
        srv.stop()


def main():
    section("scripted_http streamable", check_streamable)
    section("scripted_http legacy", check_legacy)
    section("scripted_http oauth", check_oauth)
    section("fast_server", check_fast_server)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
