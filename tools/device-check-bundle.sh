#!/usr/bin/env bash
# Makes the bundle tools/device-check.sh needs beside the tree on a GPU machine
# that has no CMocka, no Fashion-MNIST and no network. Run it here, on Debian:
#
#   tools/device-check-bundle.sh [DIR] [--data-from DIR]
#
#   DIR/cmocka         CMocka from Debian's libcmocka0 and libcmocka-dev:
#                      include/cmocka.h, lib/libcmocka.so*, lib/pkgconfig/cmocka.pc
#                      (prefix relative to the file; device-check.sh writes its own)
#   DIR/zlib           zlib's headers and library from zlib1g and zlib1g-dev, used
#                      only where the machine has no zlib.h
#   DIR/fashion-mnist  the four IDX files, copied from --data-from
#                      (default /usr/share/datasets/fashion-mnist), about 30 MB
#
# The .deb files come from `apt-get download`, else from /var/cache/apt/archives;
# they are unpacked with `dpkg-deb -x`, nothing is installed. Libraries are
# plain files, links resolved, so the bundle survives any copy. DIR defaults to
# build-device-bundle/ in the source tree (git ignores it); a session that runs
# the check elsewhere brings it along (the device tool: carry it). Then:
#
#   tools/device-check.sh OUTDIR --bundle DIR
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest=""
data_from=/usr/share/datasets/fashion-mnist
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data-from) data_from="${2:-}"; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "device-check-bundle: unknown option '$1'" >&2; exit 2 ;;
    *) [[ -z "$dest" ]] || { echo "device-check-bundle: extra argument '$1'" >&2; exit 2; }
       dest="$1" ;;
  esac
  shift
done
dest="${dest:-$root/build-device-bundle}"
die() { echo "device-check-bundle: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null 2>&1 || die "no dpkg-deb: run this on Debian"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root"
for package in libcmocka0 libcmocka-dev zlib1g zlib1g-dev; do
  if (cd "$work/debs" && apt-get download "$package" >>"$work/apt.log" 2>&1); then
    continue
  fi
  cached="$(find /var/cache/apt/archives -maxdepth 1 -name "${package}_*.deb" 2>/dev/null |
            sort -V | tail -1)"
  [[ -n "$cached" ]] || die "$package: apt-get download failed ($(tail -1 "$work/apt.log")) and /var/cache/apt/archives has no ${package}_*.deb"
  cp "$cached" "$work/debs/"
done
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root" || die "dpkg-deb -x $deb failed"
  echo "unpacked $(basename "$deb")"
done

# Debian's multiarch folders, flattened into include/ and lib/.
flatten() {  # name, headers..., --, library globs...
  local name="$1" out="$dest/$1" f
  shift
  rm -rf "$out"
  mkdir -p "$out/include" "$out/lib"
  while [[ $# -gt 0 && "$1" != -- ]]; do
    cp "$work/root/usr/include/$1" "$out/include/" || die "$name: no usr/include/$1 in the .debs"
    shift
  done
  shift
  local pattern real
  shopt -s nullglob
  for pattern in "$@"; do
    # shellcheck disable=SC2231  # the pattern is a glob
    for f in "$work"/root/usr/lib/*/$pattern "$work"/root/lib/*/$pattern; do
      # Links become copies of what they name, looked up among the unpacked
      # files (the -dev packages' links may be absolute: /lib/...), so that
      # nothing depends on links surviving the trip to the GPU machine.
      real="$f"
      while [[ -L "$real" ]]; do
        real="$(find "$work/root" -name "$(basename "$(readlink "$real")")" -print -quit)"
        [[ -n "$real" ]] || die "$name: $f names a file the .debs do not hold"
      done
      cp "$real" "$out/lib/$(basename "$f")"
    done
  done
  shopt -u nullglob
}
flatten cmocka cmocka.h cmocka_pbc.h -- 'libcmocka.so*'
flatten zlib zlib.h zconf.h -- 'libz.so*'
[[ -e "$dest/cmocka/lib/libcmocka.so" ]] || die "cmocka: no lib/libcmocka.so after unpacking"
[[ -e "$dest/zlib/lib/libz.so" ]] || die "zlib: no lib/libz.so after unpacking"
version="$(sed -n 's/^Version: *//p' "$work"/root/usr/lib/*/pkgconfig/cmocka.pc | head -1)"
mkdir -p "$dest/cmocka/lib/pkgconfig"
cat >"$dest/cmocka/lib/pkgconfig/cmocka.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: cmocka
Description: The cmocka unit testing library
Version: ${version:-0}
Libs: -L\${libdir} -lcmocka
Cflags: -I\${includedir}
EOF

rm -rf "$dest/fashion-mnist"
mkdir -p "$dest/fashion-mnist"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
         t10k-labels-idx1-ubyte; do
  src="$data_from/$f.gz"
  [[ -f "$src" ]] || src="$data_from/$f"
  [[ -f "$src" ]] || die "Fashion-MNIST: no $f(.gz) in $data_from (Debian: dataset-fashion-mnist)"
  cp "$src" "$dest/fashion-mnist/"
done

echo "bundle: $dest ($(du -sh "$dest" | cut -f1)): cmocka ${version:-?}, zlib, fashion-mnist"
echo "on the GPU machine, with $dest beside the tree:"
echo "  tools/device-check.sh OUTDIR --bundle ${dest#"$root"/}"
