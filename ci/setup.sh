#!/usr/bin/env bash
# Installs what building and testing tern needs, on a Debian-like host with
# rustup. Idempotent: it only installs what is missing, through apt-get and
# rustup by package name, and names the step that failed.
set -euo pipefail

fail() { echo "ci/setup.sh: $*" >&2; exit 1; }
missing=()
command -v musl-gcc >/dev/null 2>&1 || missing+=(musl-tools) # C parts of ring for musl
command -v file >/dev/null 2>&1 || missing+=(file)            # static-link check
command -v tmux >/dev/null 2>&1 || missing+=(tmux)            # terminal-mode tests
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)   # constrained-host tests
command -v strace >/dev/null 2>&1 || missing+=(strace)        # sandbox ptrace escape test
command -v python3 >/dev/null 2>&1 || missing+=(python3)      # socket tests, SDK, MCP servers
command -v cc >/dev/null 2>&1 || missing+=(gcc)               # sandbox build test
command -v g++ >/dev/null 2>&1 || missing+=(g++)              # llama.cpp for the local-model test
command -v cmake >/dev/null 2>&1 || missing+=(cmake)          # building llama-server
command -v pgrep >/dev/null 2>&1 || missing+=(procps)         # MCP orphan check
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)           # Bash stdin test (rg without a path)
command -v tree >/dev/null 2>&1 || missing+=(tree)            # Bash attack suite (tree -o writes its listing)
command -v git >/dev/null 2>&1 || missing+=(git)              # git in sandboxed builds, protected-path test (core.fsmonitor)
command -v gawk >/dev/null 2>&1 || missing+=(gawk)            # the awk reader against gawk as well as mawk and busybox
command -v qpdf >/dev/null 2>&1 && command -v pdftoppm >/dev/null 2>&1 || missing+=(qpdf poppler-utils) # other readers check Read's cut PDFs
python3 -c "import cryptography" 2>/dev/null || missing+=(python3-cryptography) # MCP test server checks client assertions
# A static BusyBox as the only shell of the constrained-host tests' empty root.
file /bin/busybox 2>/dev/null | grep -q "statically linked" || missing+=(busybox-static)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq || fail "step 'apt-get update' failed"
  $sudo apt-get install -y -qq "${missing[@]}" >/dev/null \
    || fail "step 'apt-get install ${missing[*]}' failed"
fi

if ! rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
  rustup target add x86_64-unknown-linux-musl || fail "step 'rustup target add x86_64-unknown-linux-musl' failed"
fi
# rust-src: release builds compile std for size (cross/common.sh).
for component in clippy rustfmt rust-src; do
  rustup component list --installed | grep -q "^$component" \
    || rustup component add "$component" || fail "step 'rustup component add $component' failed"
done
