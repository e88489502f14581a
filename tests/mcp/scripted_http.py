"""A scripted MCP server over HTTP for the remote-transport tests: standard
library only, bound to 127.0.0.1, never reaching out anywhere.

    python3 scripted_http.py MODE PORT_FILE [LOG_FILE]

It binds port 0, writes the port (digits and a newline) to PORT_FILE once it
listens (through PORT_FILE.tmp and a rename, so a reader never sees half a
number), and serves until killed. Every request but GET /stats is appended to
LOG_FILE as one JSON line: {"method", "path", "headers" (names lower-cased),
"body" (parsed JSON, else text, else null)}.

Modes:
  streamable  streamable HTTP at /mcp: sessions (Mcp-Session-Id), a standalone
              GET stream with per-session event ids and Last-Event-ID replay
  legacy      the 2024-11-05 HTTP+SSE transport: GET /sse (or GET /mcp asking
              for text/event-stream), POST /messages?session_id=...; a POST to
              /mcp or /sse gets 405 so a client that tries streamable HTTP
              first falls back
  oauth       streamable at /mcp behind bearer tokens, with the protected
              resource metadata and an authorization server (metadata, dynamic
              registration, authorize that approves at once with a 302, token
              with PKCE S256 and rotating refresh tokens) on the same port

Environment:
  SCRIPTED_SSE_POST=1          answer POSTed requests as text/event-stream
  SCRIPTED_DROP_GET_AFTER=N    end a GET stream after N events on it
  SCRIPTED_GET_405=1           no GET stream (405); server messages are dropped
  SCRIPTED_DROP_SSE_AFTER=N    legacy: end the SSE stream (and its session)
                               after N message events
  SCRIPTED_NO_REGISTRATION=1   oauth: no registration endpoint; only the
                               client id preset-client is known
  SCRIPTED_REQUIRE_RESOURCE=1  oauth: authorize and token must carry resource
  SCRIPTED_TOKEN_TTL=S         oauth: access token lifetime (default 3600)
  SCRIPTED_REFRESH_FAILS=1     oauth: every refresh_token grant fails
  SCRIPTED_AUTH_METHOD=M       oauth: the only token endpoint auth method
                               (none, client_secret_basic, client_secret_post);
                               registration hands out a secret for the others,
                               and the token endpoint takes no other method
  SCRIPTED_MACHINE=secret|jwt  oauth: a client_credentials client machine-client,
                               with the secret machine-secret (by
                               SCRIPTED_AUTH_METHOD) or a P-256 key (ES256
                               assertions, checked with Python's cryptography:
                               signature, iss = sub = client, aud = the issuer,
                               exp, jti once) written as PKCS#8 PEM to
                               SCRIPTED_MACHINE_KEY_FILE
  SCRIPTED_INIT_OPEN=1         oauth: initialize and notifications need no token
  SCRIPTED_STEP_UP=S           oauth: tools/call needs the scope S too (403
                               insufficient_scope naming "mcp S" otherwise)
  SCRIPTED_ALWAYS_401=1        oauth: /mcp refuses every token with 401
  SCRIPTED_BAD_TOKEN=1         oauth: the token endpoint answers 200 with HTML

The MCP server behind every mode is the same: tools echo, poke, touch (and
fresh once poke has run), the prompt greet, the resource memo://one with
subscriptions. poke and touch send their notifications on the GET stream
(streamable, oauth) or the SSE stream (legacy), never in a POST answer.
"""

import base64
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit


def env_flag(name):
    return os.environ.get(name) == "1"


def env_int(name, default=None):
    value = os.environ.get(name)
    return int(float(value)) if value else default


MODE = sys.argv[1] if len(sys.argv) > 1 else ""
if MODE not in ("streamable", "legacy", "oauth") or len(sys.argv) < 3:
    sys.exit("usage: scripted_http.py streamable|legacy|oauth PORT_FILE [LOG_FILE]")
PORT_FILE = sys.argv[2]
LOG_FILE = sys.argv[3] if len(sys.argv) > 3 else None

SSE_POST = env_flag("SCRIPTED_SSE_POST")
DROP_GET_AFTER = env_int("SCRIPTED_DROP_GET_AFTER")
GET_405 = env_flag("SCRIPTED_GET_405")
DROP_SSE_AFTER = env_int("SCRIPTED_DROP_SSE_AFTER")
NO_REGISTRATION = env_flag("SCRIPTED_NO_REGISTRATION")
REQUIRE_RESOURCE = env_flag("SCRIPTED_REQUIRE_RESOURCE")
TOKEN_TTL = env_int("SCRIPTED_TOKEN_TTL", 3600)
REFRESH_FAILS = env_flag("SCRIPTED_REFRESH_FAILS")
AUTH_METHOD = os.environ.get("SCRIPTED_AUTH_METHOD", "none")
MACHINE = os.environ.get("SCRIPTED_MACHINE")
INIT_OPEN = env_flag("SCRIPTED_INIT_OPEN")
STEP_UP = os.environ.get("SCRIPTED_STEP_UP")
ALWAYS_401 = env_flag("SCRIPTED_ALWAYS_401")
BAD_TOKEN = env_flag("SCRIPTED_BAD_TOKEN")

KEEPALIVE_SECONDS = 2.0
CODE_TTL_SECONDS = 60
VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")

# One lock guards all shared state; its condition is notified whenever a
# stream may have something new, and every stream re-checks its own state.
# Contention is irrelevant at test scale and one lock cannot deadlock.
changed = threading.Condition(threading.RLock())
BASE = ""  # http://127.0.0.1:PORT, set once the socket is bound


# ---------------------------------------------------------------- the MCP app

class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class McpSession:
    """One client's MCP session, whichever transport carries it."""

    def __init__(self):
        self.id = secrets.token_hex(16)
        self.subscriptions = set()
        self.closed = False
        # streamable: every event meant for a GET stream, as (event id,
        # message); ids are 1-based positions, so they only grow. Kept whole
        # so any Last-Event-ID can be replayed.
        self.history = []
        self.delivered = 0  # highest event id written to some GET stream
        self.stream_gen = 0  # bumped when a GET stream opens: older ones stop
        # legacy: messages waiting for the SSE stream
        self.queue = []

    def push(self, message):
        """Queue a message for the session's server-to-client stream."""
        with changed:
            if MODE == "legacy":
                self.queue.append(message)
            elif not GET_405:
                self.history.append((len(self.history) + 1, message))
            changed.notify_all()


sessions = {}
poked = False  # server-wide: once poke ran, fresh is listed for everyone

MEMO = {"uri": "memo://one", "name": "one", "mimeType": "text/plain"}


def tool_list():
    tools = [
        {"name": "echo", "description": "echoes its text",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]}},
        {"name": "poke", "description": "changes the tool list and logs",
         "inputSchema": {"type": "object", "properties": {}}},
        {"name": "touch", "description": "reports a resource as updated",
         "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}},
                         "required": ["uri"]}},
    ]
    if poked:
        tools.append({"name": "fresh", "description": "appears after poke",
                      "inputSchema": {"type": "object", "properties": {}}})
    return tools


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


def call_tool(session, params):
    global poked
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        if not isinstance(args.get("text"), str):
            raise RpcError(-32602, "echo needs a string argument text")
        return text_result("echo: " + args["text"])
    if name == "poke":
        with changed:
            poked = True
        session.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        session.push({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "poked"}})
        return text_result("poked")
    if name == "touch":
        uri = args.get("uri")
        if not isinstance(uri, str):
            raise RpcError(-32602, "touch needs a string argument uri")
        if uri in session.subscriptions:
            session.push({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                          "params": {"uri": uri}})
        return text_result("touched")
    if name == "fresh" and poked:
        return text_result("fresh tool")
    raise RpcError(-32602, f"unknown tool: {name}")


def get_prompt(params):
    if params.get("name") != "greet":
        raise RpcError(-32602, f"unknown prompt: {params.get('name')}")
    args = params.get("arguments") or {}
    if not args.get("name"):
        raise RpcError(-32602, "missing required argument: name")
    tone = args.get("tone") or "plain"
    return {"description": "A greeting",
            "messages": [{"role": "user", "content": {
                "type": "text", "text": f"Say hello to {args['name']} in a {tone} tone."}}]}


def dispatch(session, method, params):
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {"listChanged": True}, "prompts": {"listChanged": False},
                             "resources": {"subscribe": True, "listChanged": False}, "logging": {}},
            "serverInfo": {"name": "scripted-http-" + MODE, "version": "1.0.0"},
        }
    if method in ("ping", "logging/setLevel"):
        return {}
    if method == "tools/list":
        return {"tools": tool_list()}
    if method == "tools/call":
        return call_tool(session, params)
    if method == "prompts/list":
        return {"prompts": [{"name": "greet", "description": "A greeting",
                             "arguments": [{"name": "name", "required": True},
                                           {"name": "tone", "required": False}]}]}
    if method == "prompts/get":
        return get_prompt(params)
    if method == "resources/list":
        return {"resources": [MEMO]}
    if method == "resources/read":
        if params.get("uri") != MEMO["uri"]:
            raise RpcError(-32002, f"resource not found: {params.get('uri')}")
        return {"contents": [{"uri": MEMO["uri"], "mimeType": "text/plain", "text": "memo one body"}]}
    if method in ("resources/subscribe", "resources/unsubscribe"):
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(-32602, "missing uri")
        with changed:
            if method == "resources/subscribe":
                session.subscriptions.add(uri)
            else:
                session.subscriptions.discard(uri)
        return {}
    raise RpcError(-32601, f"method not found: {method}")


def rpc_error(mid, code, message):
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}


def handle_message(session, msg):
    """Answer one JSON-RPC message; None for notifications and responses."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return rpc_error(None, -32600, "invalid request")
    if "method" not in msg or "id" not in msg:
        return None  # a notification, or the client answering us: nothing to say
    params = msg.get("params") or {}
    try:
        result = dispatch(session, msg["method"], params)
    except RpcError as err:
        return rpc_error(msg["id"], err.code, err.message)
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


# ------------------------------------------------------------------ OAuth state

PRESET_CLIENT = "preset-client"
clients = {PRESET_CLIENT: {"redirect_uris": None}}  # None: any loopback redirect
codes = {}  # code -> what authorize saw
access_tokens = {}  # token -> expiry (monotonic)
token_scopes = {}  # token -> the scopes it was granted (a set)
used_jtis = set()
MACHINE_CLIENT = "machine-client"
MACHINE_SECRET = "machine-secret"
machine_key = None  # the public key of a jwt machine client
refresh_tokens = {}  # token -> client id
stats = {"tokens_issued": 0, "refreshes": 0, "registrations": 0, "authorize_calls": 0}


def resource_url():
    return BASE + "/mcp"


def auth_metadata():
    issuer = BASE + "/auth"
    meta = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": [AUTH_METHOD],
        "scopes_supported": ["mcp"] + ([STEP_UP] if STEP_UP else []),
    }
    if MACHINE:
        meta["grant_types_supported"].append("client_credentials")
    if MACHINE == "jwt":
        meta["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
        meta["token_endpoint_auth_signing_alg_values_supported"] = ["ES256"]
    if NO_REGISTRATION:
        del meta["registration_endpoint"]
    return meta


def redirect_allowed(client, uri):
    if client["redirect_uris"] is not None:
        return uri in client["redirect_uris"]
    parts = urlsplit(uri or "")
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost")


def s256(verifier):
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def token_ok(header):
    return token_scope(header) is not None


def token_scope(header):
    """The scopes of a valid bearer token, else None."""
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    with changed:
        expiry = access_tokens.get(token.strip())
        scopes = token_scopes.get(token.strip(), set())
    return scopes if expiry is not None and time.monotonic() < expiry else None


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def assertion_problem(assertion):
    """Why a client assertion is not a valid ES256 JWT of the machine
    client for this issuer, or None."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    try:
        head, body, sig = assertion.split(".")
        header = json.loads(b64url_decode(head))
        claims = json.loads(b64url_decode(body))
        raw = b64url_decode(sig)
    except ValueError:
        return "not a JWT"
    if header.get("alg") != "ES256" or len(raw) != 64:
        return "not ES256"
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        machine_key.verify(der, f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "bad signature"
    if claims.get("iss") != MACHINE_CLIENT or claims.get("sub") != MACHINE_CLIENT:
        return "iss and sub must be the client id"
    if claims.get("aud") != BASE + "/auth":
        return f"aud must be the issuer, not {claims.get('aud')!r}"
    if not isinstance(claims.get("exp"), int) or claims["exp"] < time.time():
        return "expired"
    with changed:
        if claims.get("jti") in used_jtis or not claims.get("jti"):
            return "jti missing or used before"
        used_jtis.add(claims["jti"])
    return None


# -------------------------------------------------------------------- the HTTP

log_lock = threading.Lock()
log_file = open(LOG_FILE, "a", encoding="utf-8") if LOG_FILE else None


def log_request(method, path, headers, body):
    if log_file is None:
        return
    line = json.dumps({"method": method, "path": path, "headers": headers, "body": body})
    with log_lock:
        log_file.write(line + "\n")
        log_file.flush()


class ClientGone(Exception):
    """The peer closed the connection while we were writing."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-http"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")

    def do_DELETE(self):
        self.serve("DELETE")

    def do_PUT(self):
        self.serve("PUT")

    # -- plumbing

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return raw
                raw += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def serve(self, method):
        self.raw_body = self.read_body()
        text = self.raw_body.decode("utf-8", "replace")
        try:
            self.json_body = json.loads(text) if text else None
            self.json_ok = bool(text)
        except ValueError:
            self.json_body, self.json_ok = None, False
        split = urlsplit(self.path)
        self.route_path = split.path
        self.query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        if self.route_path != "/stats":
            body = self.json_body if self.json_ok else (text or None)
            log_request(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        try:
            route = {"streamable": self.route_streamable, "legacy": self.route_legacy,
                     "oauth": self.route_oauth}[MODE]
            route(method)
        except ClientGone:
            self.close_connection = True

    def write(self, data):
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError) as err:
            raise ClientGone() from err

    def reply(self, status, body=b"", content_type=None, headers=None):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.write(body)

    def reply_json(self, status, obj, headers=None):
        self.reply(status, json.dumps(obj).encode(), "application/json", headers)

    def reply_text(self, status, text, headers=None):
        self.reply(status, text.encode(), "text/plain; charset=utf-8", headers)

    def start_sse(self, headers=None):
        # Close-delimited body: no Content-Length, no chunking, and the
        # connection ends with the stream.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        self.wfile.flush()

    def write_event(self, message, event="message", event_id=None):
        head = f"id: {event_id}\n" if event_id is not None else ""
        data = message if isinstance(message, str) else json.dumps(message)
        self.write(f"{head}event: {event}\ndata: {data}\n\n".encode())

    def wants_sse(self):
        return "text/event-stream" in self.headers.get("Accept", "")

    def not_found(self):
        self.reply_text(404, "not found")

    # -- streamable HTTP (also the resource side of oauth)

    def route_streamable(self, method):
        if self.route_path != "/mcp":
            return self.not_found()
        if method == "POST":
            return self.streamable_post()
        if method == "GET":
            return self.streamable_get()
        if method == "DELETE":
            return self.streamable_delete()
        self.reply_text(405, "method not allowed", {"Allow": "GET, POST, DELETE"})

    def session_or_error(self):
        """The session the request names, or None after answering the error."""
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            self.reply_json(400, rpc_error(None, -32000, "missing Mcp-Session-Id header"))
            return None
        with changed:
            session = sessions.get(sid)
        if session is None:
            self.reply_json(404, rpc_error(None, -32001, "session not found"))
        return session

    def streamable_post(self):
        if not self.json_ok:
            return self.reply_json(400, rpc_error(None, -32700, "parse error"))
        batch = isinstance(self.json_body, list)
        messages = self.json_body if batch else [self.json_body]
        headers = {}
        if any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages):
            session = McpSession()
            with changed:
                sessions[session.id] = session
            headers["Mcp-Session-Id"] = session.id
        else:
            session = self.session_or_error()
            if session is None:
                return
        answers = [a for a in (handle_message(session, m) for m in messages) if a is not None]
        if not answers:
            return self.reply(202, headers=headers)
        if SSE_POST:
            self.start_sse(headers)
            for answer in answers:
                self.write_event(answer)
            return
        self.reply_json(200, answers if batch else answers[0], headers)

    def streamable_get(self):
        if GET_405:
            return self.reply_text(405, "this server offers no GET stream", {"Allow": "POST, DELETE"})
        if not self.wants_sse():
            return self.reply_text(406, "GET /mcp needs Accept: text/event-stream")
        session = self.session_or_error()
        if session is None:
            return
        last = self.headers.get("Last-Event-ID", "").strip()
        with changed:
            session.stream_gen += 1
            generation = session.stream_gen
            changed.notify_all()  # an older stream of this session stops now
            position = int(last) if last.isdigit() else session.delivered
        self.start_sse()
        written = 0
        last_write = time.monotonic()
        while True:
            with changed:
                while True:
                    if session.closed or session.stream_gen != generation:
                        return
                    batch = [e for e in session.history if e[0] > position]
                    wait = last_write + KEEPALIVE_SECONDS - time.monotonic()
                    if batch or wait <= 0:
                        break
                    changed.wait(wait)
            if not batch:
                self.write(b": keepalive\n\n")
                last_write = time.monotonic()
                continue
            for event_id, message in batch:
                self.write_event(message, event_id=event_id)
                position = event_id
                written += 1
                with changed:
                    session.delivered = max(session.delivered, event_id)
                if DROP_GET_AFTER and written >= DROP_GET_AFTER:
                    return
            last_write = time.monotonic()

    def streamable_delete(self):
        session = self.session_or_error()
        if session is None:
            return
        with changed:
            session.closed = True
            sessions.pop(session.id, None)
            changed.notify_all()
        self.reply(200)

    # -- legacy HTTP+SSE

    def route_legacy(self, method):
        path = self.route_path
        if method == "GET" and (path == "/sse" or (path == "/mcp" and self.wants_sse())):
            return self.legacy_stream()
        if method == "POST" and path == "/messages":
            return self.legacy_post()
        if path in ("/mcp", "/sse", "/messages"):
            return self.reply_text(405, "method not allowed: this server speaks HTTP+SSE",
                                   {"Allow": "GET" if path != "/messages" else "POST"})
        self.not_found()

    def legacy_stream(self):
        session = McpSession()
        with changed:
            sessions[session.id] = session
        try:
            self.start_sse()
            self.write_event(f"/messages?session_id={session.id}", event="endpoint")
            written = 0
            last_write = time.monotonic()
            while True:
                with changed:
                    while not session.queue:
                        wait = last_write + KEEPALIVE_SECONDS - time.monotonic()
                        if wait <= 0:
                            break
                        changed.wait(wait)
                    batch, session.queue = session.queue, []
                if not batch:
                    self.write(b": keepalive\n\n")
                    last_write = time.monotonic()
                    continue
                for message in batch:
                    self.write_event(message)
                    written += 1
                    if DROP_SSE_AFTER and written >= DROP_SSE_AFTER:
                        return
                last_write = time.monotonic()
        finally:
            # The stream is the session: once it ends, its endpoint is gone.
            with changed:
                session.closed = True
                sessions.pop(session.id, None)

    def legacy_post(self):
        with changed:
            session = sessions.get(self.query.get("session_id", ""))
        if session is None:
            return self.reply_text(404, "unknown session")
        if not self.json_ok:
            return self.reply_text(400, "body is not JSON")
        self.reply(202, b"Accepted", "text/plain; charset=utf-8")
        # Answered after the 202 went out, on the stream, as the transport has it.
        messages = self.json_body if isinstance(self.json_body, list) else [self.json_body]
        for message in messages:
            answer = handle_message(session, message)
            if answer is not None:
                session.push(answer)

    # -- oauth: resource server and authorization server on one port

    def route_oauth(self, method):
        path = self.route_path
        if path == "/mcp":
            rpc = self.json_body.get("method", "") if isinstance(self.json_body, dict) else ""
            if INIT_OPEN and (rpc == "initialize" or rpc.startswith("notifications/")):
                return self.route_streamable(method)
            scopes = token_scope(self.headers.get("Authorization"))
            metadata = f'resource_metadata="{BASE}/.well-known/oauth-protected-resource"'
            if scopes is None or ALWAYS_401:
                challenge = f'Bearer {metadata}, scope="mcp"'
                return self.reply_json(401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge})
            if STEP_UP and rpc == "tools/call" and STEP_UP not in scopes:
                challenge = f'Bearer error="insufficient_scope", scope="mcp {STEP_UP}", {metadata}'
                return self.reply_json(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": challenge})
            return self.route_streamable(method)
        if method == "GET" and path in ("/.well-known/oauth-protected-resource",
                                        "/.well-known/oauth-protected-resource/mcp"):
            return self.reply_json(200, {"resource": resource_url(),
                                         "authorization_servers": [BASE + "/auth"],
                                         "scopes_supported": ["mcp"],
                                         "bearer_methods_supported": ["header"]})
        if method == "GET" and path in ("/.well-known/oauth-authorization-server/auth",
                                        "/auth/.well-known/openid-configuration"):
            return self.reply_json(200, auth_metadata())
        if method == "POST" and path == "/auth/register" and not NO_REGISTRATION:
            return self.register()
        if method == "GET" and path == "/auth/authorize":
            return self.authorize()
        if method == "POST" and path == "/auth/token":
            return self.token()
        if method == "GET" and path == "/stats":
            with changed:
                snapshot = dict(stats)
            return self.reply_json(200, snapshot)
        self.not_found()

    def register(self):
        meta = self.json_body if self.json_ok and isinstance(self.json_body, dict) else None
        uris = meta.get("redirect_uris") if meta else None
        if not (isinstance(uris, list) and uris and all(isinstance(u, str) for u in uris)):
            return self.reply_json(400, {"error": "invalid_redirect_uri",
                                         "error_description": "redirect_uris must be a non-empty list of strings"})
        client_id = secrets.token_hex(12)
        secret = secrets.token_hex(12) if AUTH_METHOD != "none" else None
        with changed:
            clients[client_id] = {"redirect_uris": list(uris), "secret": secret, "method": AUTH_METHOD}
            stats["registrations"] += 1
        answer = {"client_secret": secret} if secret else {}
        self.reply_json(201, {
            **answer,
            "client_id": client_id,
            "client_id_issued_at": int(time.time()),
            "redirect_uris": uris,
            "token_endpoint_auth_method": AUTH_METHOD,
            "grant_types": meta.get("grant_types") or ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": meta.get("client_name"),
        })

    def authorize(self):
        q = self.query
        with changed:
            stats["authorize_calls"] += 1
            client = clients.get(q.get("client_id"))
        resource = q.get("resource")
        # The first failed check is named; a bad request is never redirected.
        failure = None
        if q.get("response_type") != "code":
            failure = "response_type must be code"
        elif client is None:
            failure = "unknown client_id"
        elif not redirect_allowed(client, q.get("redirect_uri")):
            failure = "redirect_uri is not registered for this client"
        elif not q.get("code_challenge"):
            failure = "code_challenge is missing"
        elif q.get("code_challenge_method") != "S256":
            failure = "code_challenge_method must be S256"
        elif REQUIRE_RESOURCE and resource is None:
            failure = "resource is missing"
        elif resource is not None and resource != resource_url():
            failure = f"resource must be {resource_url()}"
        if failure:
            return self.reply_text(400, "authorize failed: " + failure)
        code = secrets.token_urlsafe(24)
        with changed:
            codes[code] = {"client_id": q["client_id"], "redirect_uri": q["redirect_uri"],
                           "challenge": q["code_challenge"], "resource": resource,
                           "scope": q.get("scope") or "mcp",
                           "expires": time.monotonic() + CODE_TTL_SECONDS}
        answer = {"code": code}
        if "state" in q:
            answer["state"] = q["state"]
        redirect = q["redirect_uri"]
        location = redirect + ("&" if "?" in redirect else "?") + urlencode(answer)
        self.reply(302, headers={"Location": location})

    def token(self):
        def fail(error, description=None, status=400):
            body = {"error": error}
            if description:
                body["error_description"] = description
            self.reply_json(status, body, {"Cache-Control": "no-store"})

        if "application/x-www-form-urlencoded" not in self.headers.get("Content-Type", ""):
            return fail("invalid_request", "the body must be application/x-www-form-urlencoded")
        form = {k: v[-1] for k, v in parse_qs(self.raw_body.decode("utf-8", "replace"),
                                              keep_blank_values=True).items()}
        client_id = form.get("client_id")
        scheme, _, cred = self.headers.get("Authorization", "").partition(" ")
        basic_secret = None
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(cred).decode().partition(":")
            except ValueError:
                return fail("invalid_client", "Basic credentials are not base64", 401)
            # RFC 6749 2.3.1: both parts are form-encoded.
            client_id, basic_secret = unquote_plus(user), unquote_plus(password)
        with changed:
            client = clients.get(client_id)
        if client is None:
            return fail("invalid_client", "unknown client_id")
        used = ("client_secret_basic" if basic_secret is not None
                else "private_key_jwt" if "client_assertion" in form
                else "client_secret_post" if "client_secret" in form else "none")
        with changed:
            stats.setdefault("auth_methods", []).append(used)
        wanted = client.get("method", "none")
        if used != wanted:
            return fail("invalid_client", f"this client authenticates by {wanted}, not {used}", 401)
        if used == "client_secret_basic" and basic_secret != client["secret"]:
            return fail("invalid_client", "wrong client secret", 401)
        if used == "client_secret_post" and form.get("client_secret") != client["secret"]:
            return fail("invalid_client", "wrong client secret", 401)
        if used == "private_key_jwt":
            if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
                return fail("invalid_client", "wrong client_assertion_type", 401)
            problem = assertion_problem(form.get("client_assertion", ""))
            if problem:
                return fail("invalid_client", "client assertion: " + problem, 401)
        resource = form.get("resource")
        if (REQUIRE_RESOURCE and resource is None) or (resource is not None and resource != resource_url()):
            return fail("invalid_target", f"resource must be {resource_url()}")
        grant = form.get("grant_type")
        scope = "mcp"
        if grant == "client_credentials" and client_id == MACHINE_CLIENT:
            scope = form.get("scope") or "mcp"
        elif grant == "authorization_code":
            with changed:
                grant_info = codes.pop(form.get("code", ""), None)  # single use, even on failure
            if grant_info is None or time.monotonic() > grant_info["expires"]:
                return fail("invalid_grant", "unknown, used or expired code")
            if grant_info["client_id"] != client_id:
                return fail("invalid_grant", "code was issued to another client")
            if grant_info["redirect_uri"] != form.get("redirect_uri"):
                return fail("invalid_grant", "redirect_uri differs from the authorize request")
            verifier = form.get("code_verifier")
            if not verifier or s256(verifier) != grant_info["challenge"]:
                return fail("invalid_grant", "code_verifier does not match code_challenge")
            scope = grant_info["scope"]
        elif grant == "refresh_token":
            if REFRESH_FAILS:
                return fail("invalid_grant", "refresh is switched off (SCRIPTED_REFRESH_FAILS)")
            with changed:
                owner = refresh_tokens.get(form.get("refresh_token", ""))
                if owner == client_id:
                    del refresh_tokens[form["refresh_token"]]  # rotation: the old one dies now
            if owner != client_id:
                return fail("invalid_grant", "unknown or already used refresh token")
        else:
            return fail("unsupported_grant_type", f"grant_type {grant!r} is not supported")
        if BAD_TOKEN:
            return self.reply(200, b"<html>a proxy's login page</html>", "text/html")
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with changed:
            access_tokens[access] = time.monotonic() + TOKEN_TTL
            token_scopes[access] = set(scope.split())
            refresh_tokens[refresh] = client_id
            stats["tokens_issued"] += 1
            if grant == "refresh_token":
                stats["refreshes"] += 1
        self.reply_json(200, {"access_token": access, "token_type": "Bearer", "expires_in": TOKEN_TTL,
                              "refresh_token": refresh, "scope": scope},
                        {"Cache-Control": "no-store"})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client vanishing mid-request is routine here; anything else is a
        # bug in this script and worth a traceback on stderr.
        if not isinstance(sys.exc_info()[1], (ConnectionError, ClientGone, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    global BASE
    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    BASE = f"http://127.0.0.1:{port}"
    if AUTH_METHOD != "none":
        clients[PRESET_CLIENT].update(secret="preset-secret", method=AUTH_METHOD)
    if MACHINE == "secret":
        clients[MACHINE_CLIENT] = {"redirect_uris": [], "secret": MACHINE_SECRET, "method": AUTH_METHOD}
    elif MACHINE == "jwt":
        global machine_key
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        private = ec.generate_private_key(ec.SECP256R1())
        machine_key = private.public_key()
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        with open(os.environ["SCRIPTED_MACHINE_KEY_FILE"], "wb") as f:
            f.write(pem)
        clients[MACHINE_CLIENT] = {"redirect_uris": [], "secret": None, "method": "private_key_jwt"}
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(f"{port}\n")
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()
