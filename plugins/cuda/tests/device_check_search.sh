#!/usr/bin/env bash
# tools/device-check.sh's preparation, on fake layouts in a temporary folder:
# what it finds and the CMake arguments it gives, and that it fails loudly
# when a piece is missing. Needs no GPU, no toolkit and no network.
#
#   device_check_search.sh ROOT CASE [BUILD]
#
#   wheels                a PyTorch-like environment (cuDNN and NCCL in the
#                         wheels, cuBLASLt in the toolkit), found through the
#                         Python's answer: the wheel's libcudnn.so.9 itself is
#                         handed to CMake, its folders go on the library path
#   wheels_cublaslt       a toolkit without cuBLASLt: the wheel's (nvidia/cu13)
#   wheels_without_cudnn  no cuDNN anywhere: fails, naming where it looked
#   cudnn_root            --cudnn-root wins over the wheels; a root without
#                         the library fails
#   cudnn_8               a cuDNN 8 header: fails, the plugin needs 9
#   no_cublaslt           no cuBLASLt anywhere: fails
#   cmocka                --cmocka PREFIX: a pkg-config file with that prefix
#                         (pkg-config finds it); without pkg-config a stand-in
#                         that answers CMake's questions; a prefix without
#                         cmocka.h fails
#   data                  --data: all four IDX files found; a cut gzip file or
#                         missing files fail, named
#   budgets               budgets over 300 s are refused before anything runs
#   pack_limit            a dry run against BUILD whose OUTDIR would hold more
#                         than 8 files fails the pack step
set -uo pipefail
root="$1"
check="$2"
build="${3:-}"
script="$root/tools/device-check.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work"

fail() { echo "FAIL ($check): $*"; echo "--- output:"; cat "$work/out" 2>/dev/null; exit 1; }
expect_line() { grep -qxF -- "$1" "$work/out" || fail "no line '$1'"; }
expect_text() { grep -qF -- "$1" "$work/out" || fail "no '$1'"; }
expect_no_text() { ! grep -qF -- "$1" "$work/out" || fail "unexpected '$1'"; }
# Runs the script; $1 is the exit status it must give.
expect_status() {
  local want="$1" got
  shift
  "$@" >"$work/out" 2>&1
  got=$?
  [[ "$got" == "$want" ]] || fail "exit $got, expected $want: $*"
}

# The target image: nvidia-* wheels in site-packages, a toolkit without cuDNN.
sp="$work/site-packages"
tk="$work/cuda"
mkdir -p "$sp/nvidia/cudnn/include" "$sp/nvidia/cudnn/lib" "$sp/nvidia/nccl/lib" \
         "$sp/nvidia/cu13/include" "$sp/nvidia/cu13/lib" "$tk/bin" "$tk/include" "$tk/lib64"
touch "$sp/nvidia/cudnn/include/cudnn_graph.h" "$sp/nvidia/cudnn/lib/libcudnn.so.9" \
      "$sp/nvidia/cudnn/lib/libcudnn_graph.so.9" "$sp/nvidia/nccl/lib/libnccl.so.2" \
      "$sp/nvidia/cu13/include/cublasLt.h" "$sp/nvidia/cu13/lib/libcublasLt.so.13" \
      "$tk/include/cublasLt.h" "$tk/lib64/libcublasLt.so"
printf '#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 19\n' >"$sp/nvidia/cudnn/include/cudnn_version.h"
# A Python that answers the site-packages question with the fake folder.
printf '#!/bin/sh\necho "%s"\n' "$sp" >"$work/python"
chmod +x "$work/python"
export CUDA_HOME="$tk"
search=("$script" --print-cmake-args --python "$work/python")

case "$check" in
  wheels)
    expect_status 0 "${search[@]}"
    expect_line "cmake: -DTSR_CUDNN_INCLUDE_DIR=$sp/nvidia/cudnn/include"
    expect_line "cmake: -DTSR_CUDNN_LIBRARY=$sp/nvidia/cudnn/lib/libcudnn.so.9"
    expect_line "cmake: -DTSR_PLUGIN_CUDA=ON"
    expect_line "cmake: -DTSR_WERROR=ON"
    expect_line "cmake: -DTSR_BUILD_TESTS=ON"
    expect_line "cmake: -DCMAKE_CUDA_COMPILER=$tk/bin/nvcc"
    expect_no_text "CUDA_cublasLt_LIBRARY"  # the toolkit's, found by CMake itself
    expect_text "found: cuBLASLt toolkit $tk"
    expect_text "found: NCCL $sp/nvidia/nccl/lib/libnccl.so.2"
    expect_text "env: LD_LIBRARY_PATH=$sp/nvidia/cudnn/lib:$sp/nvidia/nccl/lib:$tk/lib64"
    # PyTorch's processes get the wheels' folders only, never the toolkit's.
    expect_line "env: bench LD_LIBRARY_PATH=$sp/nvidia/cudnn/lib:$sp/nvidia/nccl/lib"
    ;;
  wheels_cublaslt)
    rm "$tk/include/cublasLt.h" "$tk/lib64/libcublasLt.so"
    expect_status 0 "${search[@]}"
    expect_line "cmake: -DCUDA_cublasLt_LIBRARY=$sp/nvidia/cu13/lib/libcublasLt.so.13"
    expect_line "cmake: -DCMAKE_C_FLAGS=-isystem $sp/nvidia/cu13/include"
    expect_text "$sp/nvidia/cu13/lib"
    ;;
  wheels_without_cudnn)
    rm -r "$sp/nvidia/cudnn"
    expect_status 1 "${search[@]}"
    expect_text "FAIL: cuDNN 9 not found"
    expect_text "($sp)"
    expect_text "under $tk"
    expect_no_text "cmake: "
    ;;
  cudnn_root)
    mkdir -p "$work/cudnn/include" "$work/cudnn/lib64"
    cp "$sp/nvidia/cudnn/include/"* "$work/cudnn/include/"
    touch "$work/cudnn/lib64/libcudnn.so" "$work/cudnn/lib64/libcudnn_graph.so.9"
    expect_status 0 "${search[@]}" --cudnn-root "$work/cudnn"
    expect_line "cmake: -DTSR_CUDNN_LIBRARY=$work/cudnn/lib64/libcudnn.so"
    expect_text "found: cuDNN 9 --cudnn-root $work/cudnn"
    rm "$work/cudnn/lib64/"*
    expect_status 1 "${search[@]}" --cudnn-root "$work/cudnn"
    expect_text "FAIL: --cudnn-root $work/cudnn: no lib/libcudnn.so"
    expect_no_text "cmake: "
    ;;
  cudnn_8)
    printf '#define CUDNN_MAJOR 8\n' >"$sp/nvidia/cudnn/include/cudnn_version.h"
    expect_status 1 "${search[@]}"
    expect_text "is version '8'; the plugin needs 9"
    ;;
  no_cublaslt)
    rm "$tk/include/cublasLt.h" "$tk/lib64/libcublasLt.so" "$sp/nvidia/cu13/lib/libcublasLt.so.13"
    expect_status 1 "${search[@]}"
    expect_text "FAIL: cuBLASLt not found"
    ;;
  cmocka)
    mkdir -p "$work/cmocka/include" "$work/cmocka/lib"
    touch "$work/cmocka/include/cmocka.h" "$work/cmocka/lib/libcmocka.so.0"
    expect_status 0 "${search[@]}" --cmocka "$work/cmocka"
    expect_text "found: CMocka"
    pc_path="$(sed -n 's/^env: PKG_CONFIG_PATH=//p' "$work/out")"
    [[ -f "$pc_path/cmocka.pc" ]] || fail "no cmocka.pc in '$pc_path'"
    grep -qxF "prefix=$work/cmocka" "$pc_path/cmocka.pc" || fail "cmocka.pc has another prefix"
    if command -v pkg-config >/dev/null 2>&1; then
      flags="$(PKG_CONFIG_PATH="$pc_path" pkg-config --cflags --libs cmocka)"
      [[ "$flags" == *"-I$work/cmocka/include"* && "$flags" == *"-lcmocka"* ]] ||
        fail "pkg-config gives '$flags'"
    else
      expect_text "cmake: -DPKG_CONFIG_EXECUTABLE="
    fi
    # Without pkg-config: a stand-in that answers CMake's questions.
    PKG_CONFIG=/nonexistent/pkg-config expect_status 0 "${search[@]}" --cmocka "$work/cmocka"
    shim="$(sed -n 's/^cmake: -DPKG_CONFIG_EXECUTABLE=//p' "$work/out")"
    [[ -x "$shim" ]] || fail "no pkg-config stand-in"
    [[ "$("$shim" --version)" =~ ^[0-9.]+$ ]] || fail "stand-in: no --version"
    "$shim" --print-errors --short-errors --exists cmocka || fail "stand-in: cmocka does not exist"
    ! "$shim" --exists zlib 2>/dev/null || fail "stand-in: knows zlib"
    [[ "$("$shim" --cflags-only-I cmocka)" == "-I$work/cmocka/include" ]] || fail "stand-in: cflags"
    libdir="$("$shim" --libs-only-L cmocka)"
    [[ -e "${libdir#-L}/libcmocka.so" ]] || fail "stand-in: $libdir has no libcmocka.so"
    [[ "$("$shim" --libs-only-l cmocka)" == "-lcmocka" ]] || fail "stand-in: -l"
    [[ -z "$("$shim" --libs-only-other cmocka)" ]] || fail "stand-in: other flags"
    rm "$work/cmocka/include/cmocka.h"
    expect_status 1 "${search[@]}" --cmocka "$work/cmocka"
    expect_text "FAIL: --cmocka $work/cmocka: no include/cmocka.h"
    ;;
  data)
    mkdir -p "$work/data"
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte; do
      echo x | gzip >"$work/data/$f.gz"
    done
    echo x >"$work/data/t10k-labels-idx1-ubyte"
    expect_status 0 "${search[@]}" --data "$work/data"
    expect_text "found: Fashion-MNIST at $work/data"
    head -c 10 "$work/data/train-images-idx3-ubyte.gz" >"$work/data/cut.gz"
    mv "$work/data/cut.gz" "$work/data/train-images-idx3-ubyte.gz"
    expect_status 1 "${search[@]}" --data "$work/data"
    expect_text "train-images-idx3-ubyte.gz is not a whole gzip file"
    rm "$work/data/t10k-labels-idx1-ubyte" "$work/data/train-images-idx3-ubyte.gz"
    expect_status 1 "${search[@]}" --data "$work/data"
    expect_text "lacks train-images-idx3-ubyte[.gz] t10k-labels-idx1-ubyte[.gz]"
    ;;
  budgets)
    expect_status 2 "$script" "$work/out-dir" --dry-run --build-dir "$work" --budget build=400
    expect_text "step budgets add up to 600s, more than 300s"
    [[ ! -e "$work/out-dir" ]] || fail "it made OUTDIR before refusing"
    ;;
  pack_limit)
    [[ -f "$build/CMakeCache.txt" ]] || fail "BUILD ($build) is not a build tree"
    unset CUDA_HOME  # the machine's toolkit: this is a whole dry run
    mkdir -p "$work/out-dir"
    for i in 1 2 3 4 5 6 7; do touch "$work/out-dir/foreign-$i"; done
    # (The checks before pack may fail on a machine without CMocka or the
    # data; only the pack line is judged.)
    expect_status 1 "$script" "$work/out-dir" --dry-run --build-dir "$build" --only pack
    grep -qE "^pack +FAIL .*OUTDIR holds 9 entries, more than 8" "$work/out" ||
      fail "no pack FAIL line for 9 entries"
    rm "$work/out-dir/foreign-"*
    "$script" "$work/out-dir" --dry-run --build-dir "$build" --only pack >"$work/out" 2>&1
    grep -qE "^pack +ok .*2 files in $work/out-dir: logs.tar.gz summary.txt" "$work/out" ||
      fail "no pack ok line for 2 files"
    ;;
  *)
    echo "unknown check '$check'"
    exit 2
    ;;
esac
echo "ok ($check)"
