#!/usr/bin/env bash
# Installs oneDNN 3.x (PyPI's onednn-devel-cpu-gomp: headers, libdnnl.so.3,
# GNU OpenMP) into a virtual environment outside the source tree and prints
# its prefix, for building the oneDNN plugin against the v3 API:
#   cmake -S . -B build-onednn3 -DTSR_ONEDNN_ROOT="$(scripts/onednn3.sh)"
# Debian 12 ships only oneDNN 2.6; CI builds and certifies the plugin
# against both. TSR_ONEDNN3_VENV overrides the location.
set -euo pipefail

venv="${TSR_ONEDNN3_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/onednn3-venv}"
# 2023.2.0 is oneDNN 3.2.0, the newest release whose wheels install here.
version="${TSR_ONEDNN3_VERSION:-2023.2.0}"

if [[ ! -f "$venv/include/oneapi/dnnl/dnnl.h" ]]; then
  echo "onednn3: installing onednn-devel-cpu-gomp==$version into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "onednn-devel-cpu-gomp==$version" >&2
fi
if [[ ! -f "$venv/include/oneapi/dnnl/dnnl.h" || ! -e "$venv/lib/libdnnl.so" ]]; then
  echo "onednn3: $venv has no oneDNN headers or library after the install" >&2
  exit 1
fi
echo "$venv"
