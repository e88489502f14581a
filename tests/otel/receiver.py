"""An OTLP/HTTP receiver for tests/it/otel.rs.

Listens on 127.0.0.1 (a free port, printed as `PORT <n>` on the first
line of stdout), decodes every export with the official OTLP schema (the
`opentelemetry-proto` package's generated messages, through protobuf's
JSON parser, which refuses unknown fields and wrong types), and appends
one JSON line per request to OUT: the path, whether the schema took it
(and why not), the headers, and the body as sent.

    receiver.py OUT [--sleep SECONDS]

--sleep makes every answer wait (a slow collector).
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

MESSAGES = {
    "/v1/metrics": metrics_service_pb2.ExportMetricsServiceRequest,
    "/v1/logs": logs_service_pb2.ExportLogsServiceRequest,
    "/v1/traces": trace_service_pb2.ExportTraceServiceRequest,
}

out_path = sys.argv[1]
sleep = float(sys.argv[sys.argv.index("--sleep") + 1]) if "--sleep" in sys.argv else 0.0
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        record = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "ok": False,
        }
        try:
            message = MESSAGES[self.path]()
            json_format.Parse(raw.decode("utf-8"), message)
            record["ok"] = True
            record["body"] = json.loads(raw)
        except Exception as e:  # a decode failure is the test's failure
            record["error"] = f"{type(e).__name__}: {e}"
            record["raw"] = raw.decode("utf-8", "replace")
        with lock, open(out_path, "a") as f:
            f.write(json.dumps(record) + "\n")
        if sleep:
            time.sleep(sleep)
        body = b"{}"
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up waiting: that is the point of --sleep

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
