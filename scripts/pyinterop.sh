#!/bin/sh
# Creates (once) the Python environment of the io_python_interop test: a venv
# over Debian's python3 (which has torch) with the safetensors package, at
# ~/.cache/tessera/pyinterop-venv. Prints the venv's python. Run it before
# ctest; without it the test reports SKIPPED.
set -eu
venv="$HOME/.cache/tessera/pyinterop-venv"
base="${TSR_PYINTEROP_PYTHON:-/usr/bin/python3}"
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p "$(dirname "$venv")"
  "$base" -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c 'import safetensors.torch' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet safetensors
fi
"$venv/bin/python" -c 'import torch, safetensors.torch' >/dev/null
echo "$venv/bin/python"
