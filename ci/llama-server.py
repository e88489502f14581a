"""llama.cpp's own HTTP server, run in-process by the xllamacpp wheel, behind
the command line of `llama-server` (the flags tern's tests and
ci/local-server.sh pass). ci/llama.sh installs xllamacpp (prebuilt, by
package name) into a venv and writes this file as <dir>/bin/llama-server
with that venv's Python in its first line: seconds, where building
llama.cpp from source takes ten minutes on two cores.

    llama-server -m MODEL.gguf [-c N] [--host H] [--port P] [-np N]
                 [--temp T] [--seed S] [--jinja]
    llama-server --version

An unknown flag is an error, as it is to llama-server.
"""

import argparse
import signal
import sys
import threading


def main():
    p = argparse.ArgumentParser(prog="llama-server")
    p.add_argument("-m", "--model")
    p.add_argument("-c", "--ctx-size", type=int, default=4096)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("-np", "--parallel", type=int, default=1)
    p.add_argument("--temp", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--jinja", action="store_true")
    p.add_argument("--version", action="store_true")
    a = p.parse_args()

    import xllamacpp as xlc

    if a.version:
        print("llama.cpp server through xllamacpp " + xlc.__version__)
        return 0
    if not a.model:
        p.error("-m MODEL is required")
    params = xlc.CommonParams()
    params.model.path = a.model
    params.n_ctx = a.ctx_size
    params.n_parallel = a.parallel
    params.hostnames = [a.host]
    params.port = a.port
    if a.temp is not None:
        params.sampling.temp = a.temp
    if a.seed is not None:
        params.sampling.seed = a.seed
    # The server runs on threads of its own; this one waits for a signal.
    server = xlc.Server(params)
    print("llama-server listening on " + server.listening_address, flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
