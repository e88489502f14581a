"""An MCP server built on the official Python SDK, for the tests that check
tern against a real third-party implementation rather than our own scripts.

    python fast_server.py stdio
    python fast_server.py sse  PORT_FILE    # GET /sse, POST /messages/?session_id=...
    python fast_server.py http PORT_FILE    # streamable HTTP at /mcp
    python fast_server.py http-stateless PORT_FILE       # the same, stateless_http=True
    python fast_server.py http-stateless-json PORT_FILE  # stateless, answers as JSON

Run it with the Python of $TERN_MCP_DIR/venv (ci/mcp.sh installs the `mcp`
package there as a dependency of mcp-server-time). Written against mcp 2.x
(checked with 2.3.0), where v1's FastMCP is called MCPServer and
mcp.server.fastmcp no longer imports; the v1 API differs in too many places
(field names, handler registration) to support both.

For the HTTP transports it binds 127.0.0.1 on a port the kernel picks, hands
the bound socket to uvicorn (so no other process can take the port in
between), and writes the port to PORT_FILE (through a rename) once uvicorn has
started and accepts connections.

It offers the tools add, tone (audio), pixel (two embedded blob resources)
and set_note, the prompt review, and the resource notes://today with
resources/subscribe support: set_note sends notifications/resources/updated
to a session that subscribed to it.

What the SDK's transports do (2.3.0), which a client under test must cope with:
  sse   endpoint event data is /messages/?session_id=<32 hex> (trailing slash;
        /messages without it gets a 307); POSTs answer 202 "Accepted"; SSE
        lines end in CRLF; a ": ping - <time>" comment every 15 s; POST /mcp
        and POST /sse answer 404 and 405.
  http  initialize answers with Mcp-Session-Id; POSTed requests are answered
        as text/event-stream (CRLF lines, no event ids), notifications 202;
        a POST whose Accept lacks text/event-stream gets 406; the GET stream
        exists (a second one at once gets 409) and carries no event ids;
        a GET with Last-Event-ID gets 500 (no event store is configured);
        server messages sent while no GET stream is open are dropped.
  http-stateless, http-stateless-json  (stateless_http=True, json_response
        False/True) no Mcp-Session-Id at all: every POST is served by a fresh
        transport, and there is no session a GET stream could belong to.
  Tools with a plain return type also return structuredContent
  ({"result": ...}) and advertise an outputSchema.
"""

import base64
import math
import os
import socket
import struct
import sys
import threading
import time
import zlib

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer

NOTE_URI = "notes://today"
note = {"text": "buy milk"}


def make_wav():
    """0.1 s of a 440 Hz sine, 8 kHz mono 16-bit PCM, as a whole WAV file."""
    rate, count = 8000, 800
    samples = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(count)
    )
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)  # PCM, mono, byte rate, align, bits
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def make_png():
    """A 1x1 opaque orange RGB PNG."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit, RGB
    pixels = zlib.compress(b"\x00" + bytes([255, 128, 0]))  # filter byte, then the pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


WAV = make_wav()
PNG = make_png()
DATA_BIN = bytes(i % 256 for i in range(1000))

mcp = MCPServer("tern-fast-server", version="1.0.0", log_level="WARNING")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def tone() -> types.AudioContent:
    """A short 440 Hz beep as audio/wav."""
    return types.AudioContent(type="audio", data=base64.b64encode(WAV).decode(), mime_type="audio/wav")


@mcp.tool()
def pixel() -> list[types.EmbeddedResource]:
    """A 1x1 PNG and 1000 bytes of binary data, as embedded blob resources."""
    return [
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="blob://pixel.png", mime_type="image/png", blob=base64.b64encode(PNG).decode())),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="blob://data.bin", mime_type="application/octet-stream", blob=base64.b64encode(DATA_BIN).decode())),
    ]


@mcp.prompt()
def review(file: str, focus: str = "style") -> str:
    """Asks for a review of a file."""
    return f"Review {file} with a focus on {focus}."


@mcp.resource(NOTE_URI, name="today", mime_type="text/plain")
def today() -> str:
    """Today's note."""
    return note["text"]


# Subscriptions are per connection. The SDK's ServerSession is built anew for
# each request, but it keeps the connection it belongs to, whose `state` dict
# lives as long as the client's session; that is where the subscribed URIs go.
# (The attribute is private, hence the fallback to one process-wide set, which
# is right for stdio's single connection.)
_fallback_state = {}


def subscriptions(session):
    state = getattr(getattr(session, "_connection", None), "state", _fallback_state)
    return state.setdefault("subscribed_uris", set())


async def on_subscribe(ctx, params):
    subscriptions(ctx.session).add(str(params.uri))
    return types.EmptyResult()


async def on_unsubscribe(ctx, params):
    subscriptions(ctx.session).discard(str(params.uri))
    return types.EmptyResult()


# MCPServer registers no resources/subscribe handler of its own; registering
# one on the low-level server is also what makes it advertise
# capabilities.resources.subscribe = true.
mcp._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, on_subscribe)
mcp._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, on_unsubscribe)


@mcp.tool()
async def set_note(text: str, ctx: Context) -> str:
    """Replaces today's note; subscribers hear notifications/resources/updated."""
    note["text"] = text
    session = ctx.request_context.session
    if NOTE_URI in subscriptions(session):
        # Without related_request_id this goes to the connection's standalone
        # channel: the GET stream in streamable HTTP, the SSE stream in sse.
        await session.send_resource_updated(NOTE_URI)
    return "noted"


def serve_http(transport, port_file):
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    if transport == "sse":
        app = mcp.sse_app(host="127.0.0.1")
    else:
        app = mcp.streamable_http_app(
            host="127.0.0.1",
            stateless_http=transport.startswith("http-stateless"),
            json_response=transport == "http-stateless-json",
        )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    def announce():
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        with open(port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.rename(port_file + ".tmp", port_file)

    threading.Thread(target=announce, daemon=True).start()
    server.run(sockets=[sock])


def main():
    transport = sys.argv[1] if len(sys.argv) > 1 else ""
    if transport == "stdio":
        mcp.run("stdio")
    elif transport in ("sse", "http", "http-stateless", "http-stateless-json") and len(sys.argv) > 2:
        serve_http(transport, sys.argv[2])
    else:
        sys.exit("usage: fast_server.py stdio | fast_server.py sse|http|http-stateless|http-stateless-json PORT_FILE")


if __name__ == "__main__":
    main()
