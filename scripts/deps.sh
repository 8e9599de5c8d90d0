#!/usr/bin/env bash
# Checks the Debian 12 packages Tessera needs and installs the missing ones
# when run as root; otherwise prints the apt-get command to run and fails.
# Set TSR_SKIP_DEPS=1 to skip the check (another distribution, packages
# provided some other way).
set -euo pipefail

build_packages=(build-essential cmake pkg-config git zlib1g-dev libcmocka-dev)
data_packages=(dataset-fashion-mnist)
# Debian's PyTorch, for the test that exchanges safetensors files with it;
# clang (with libFuzzer) for the fuzz targets; clang-format for the five-op
# example's size check.
test_packages=(python3-venv python3-torch clang clang-format)
backend_packages=(libdnnl-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd)
packages=("${build_packages[@]}" "${data_packages[@]}" "${test_packages[@]}"
          "${backend_packages[@]}")

if [[ "${TSR_SKIP_DEPS:-0}" == 1 ]]; then
  echo "deps: skipped (TSR_SKIP_DEPS=1)"
  exit 0
fi
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps: dpkg-query not found: these scripts expect Debian 12." >&2
  echo "deps: install the equivalents of: ${packages[*]}" >&2
  echo "deps: then rerun with TSR_SKIP_DEPS=1." >&2
  exit 1
fi

missing=()
for package in "${packages[@]}"; do
  # "ii" is the only state in which a package is fully installed.
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)"
  if [[ "$status" != ii* ]]; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} Debian packages present"
  exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: install them with:" >&2
  echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update </dev/null
apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
