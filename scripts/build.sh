#!/usr/bin/env bash
# Configures and builds Tessera into build/ (or the folder in $1, with any
# further arguments passed to cmake's configure step). Shared by scripts/main,
# scripts/test and .ci/run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$root/build}"
shift || true

# CI builds with warnings as errors (TSR_WERROR); elsewhere a new compiler's
# new warning must not stop the build.
werror=()
if [[ -n "${CI:-}" ]]; then werror=(-DTSR_WERROR=ON); fi
cmake -S "$root" -B "$build_dir" "${werror[@]}" "$@"
cmake --build "$build_dir" -j"$(nproc)"
