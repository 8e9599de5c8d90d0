#!/usr/bin/env bash
# Configures and builds Tessera into build/ (or the folder in $1, with any
# further arguments passed to cmake's configure step). Shared by scripts/main,
# scripts/test and .ci/run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$root/build}"
shift || true

cmake -S "$root" -B "$build_dir" "$@"
cmake --build "$build_dir" -j"$(nproc)"
