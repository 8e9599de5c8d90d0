#!/usr/bin/env bash
# Checks everything CUDA in Tessera on a bare machine with an NVIDIA GPU, in at
# most 5 minutes, with one command:
#
#   tools/device-check.sh OUTDIR --bundle DIR [options]
#   tools/device-check.sh OUTDIR --cmocka DIR --data DIR [options]
#
# The machine needs nvcc (CUDA_HOME, default /usr/local/cuda), cmake >= 3.25, a
# C compiler and a python3 with PyTorch; cuDNN 9, cuBLASLt and NCCL may live in
# that Python's nvidia-* wheels. What it lacks comes along beside the tree in the
# bundle that tools/device-check-bundle.sh DIR makes on a Debian machine: CMocka
# (DIR/cmocka), zlib's headers (DIR/zlib, used only when the machine has none)
# and Fashion-MNIST (DIR/fashion-mnist). Nothing is downloaded.
#
#   step        budget  what
#   toolkit       5 s   nvcc, cmake >= 3.25, a C compiler, zlib.h
#   gpu           5 s   nvidia-smi lists a GPU; its compute capability is the
#                       architecture built (skipped by --dry-run)
#   libs          5 s   cuDNN 9 and cuBLASLt found (NCCL reported): --cudnn-root,
#                       else the Python environment's site-packages/nvidia/*,
#                       else the toolkit; gives CMake's -D arguments and the
#                       library path of the steps that run
#   cmocka        2 s   --cmocka DIR (include/cmocka.h, lib/libcmocka.so*) or the
#                       system's, through pkg-config
#   data          3 s   --data DIR holds the four Fashion-MNIST IDX files
#   build       100 s   configures with -DTSR_PLUGIN_CUDA=ON (configure fails,
#                       naming what is missing, when the plugin cannot be built),
#                       tests on, -DTSR_WERROR=ON, oneDNN and OpenCL off, and
#                       builds only the targets the steps below run
#   load          5 s   tsr-info loads the plugin and lists cuda:0
#   ctest        20 s   ctest -L cuda (but cuda_device_check_dry_run: this script)
#   conformance  40 s   tsr-conformance on the plugin (8 jobs): certified
#   train_mlp    25 s   tsr-train --model mlp --device cuda:0 --epochs 1, >= 80%
#   train_cnn    35 s   the same for the CNN
#   bench        50 s   bench/harness, the part of bench/run that measures (no
#                       apt, pip, build or libtorch peer): sgemm_1024, conv,
#                       mlp_train, cnn_train, mlp_infer, Tessera on cuda:0 beside
#                       PyTorch on the same GPU, --quick, one core, 2 rounds
#   pack          5 s   OUTDIR gets at most 8 files
#
# Every step runs under `timeout`; a step never gets more than its budget or
# what is left of the 300 s. OUTDIR receives exactly: summary.txt (one line per
# step with its time, the bench table), logs.tar.gz (every log), and when their
# steps ran conformance-cuda.md and bench.json. The build tree is --build-dir
# (default build-device-check/ in the source tree, which git ignores), so that
# --only reruns a step in it. Exit status: 0 when every step that ran passed,
# 1 otherwise, 2 for bad arguments.
#
# --dry-run checks here what needs no GPU, in seconds, against an existing
# build tree that it never rebuilds: the step table, the toolkit, the library
# search on this machine and on fake wheel layouts (it must find them, and fail
# without cuDNN: plugins/cuda/tests/device_check_search.sh), CMocka, the data,
# the CMake arguments a real run would use (in logs.tar.gz: cmake-args.txt),
# the plugin loading without a driver, the cuda tests listed, conformance
# skipped with the probe's reason, tsr-train's options, the bench workloads and
# harness options, and the packing.
#
# Options:
#   --bundle DIR        DIR/cmocka, DIR/fashion-mnist, DIR/zlib (what
#                       tools/device-check-bundle.sh made)
#   --cmocka DIR        CMocka prefix: include/cmocka.h, lib/libcmocka.so*
#   --data DIR          Fashion-MNIST IDX files, raw or .gz
#                       (default /usr/share/datasets/fashion-mnist)
#   --cudnn-root DIR    cuDNN 9: DIR/include/cudnn_graph.h, DIR/lib*/libcudnn.so*;
#                       no search then
#   --python PY         the Python with PyTorch (default TSR_BENCH_PYTHON, python3)
#   --build-dir DIR     the build tree (with --dry-run: an existing one, reused)
#   --only STEP[,STEP]  run only these of build, load, ctest, conformance,
#                       train_mlp, train_cnn, bench (the checks toolkit..data
#                       and pack always run; they take seconds)
#   --arch LIST         CUDA architectures (default: the GPU's, else "80;90")
#   --jobs N            build jobs (default: all CPUs)
#   --budget STEP=S     another budget for STEP (the sum stays <= 300 s)
#   --no-werror         -DTSR_WERROR=OFF, only when another compiler's new
#                       warning stops the build; say so with the results
#   --dry-run           everything that needs no GPU, against --build-dir,
#                       which it never rebuilds (ctest: cuda_device_check_dry_run)
#   --print-cmake-args  run the libs (and, when given, cmocka and data) checks
#                       and print the CMake arguments and environment; no OUTDIR
#   --site-packages DIR search DIR instead of asking Python (for tests; repeatable)
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=""
dry=0
print_args=0
build_dir=""
jobs="$(nproc 2>/dev/null || echo 4)"
cudnn_root=""
cmocka_dir=""
data_dir=""
zlib_dir=""
bundle=""
python="${TSR_BENCH_PYTHON:-python3}"
only=""
arch=""
werror=ON
site_override=()
cmake_lib_args=(); run_path=(); bench_path=(); cmocka_args=(); cmocka_env=(); cmocka_libdir=""
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
pkg_config="${PKG_CONFIG:-pkg-config}"

steps=(toolkit gpu libs cmocka data build load ctest conformance train_mlp train_cnn bench pack)
declare -A budget=([toolkit]=5 [gpu]=5 [libs]=5 [cmocka]=2 [data]=3 [build]=100 [load]=5
                   [ctest]=20 [conformance]=40 [train_mlp]=25 [train_cnn]=35 [bench]=50
                   [pack]=5)
total_budget=300
checks=" toolkit gpu libs cmocka data pack "  # always run
workloads="sgemm_1024,conv,mlp_train,cnn_train,mlp_infer"
max_files=8

bad_usage() { echo "device-check: $*" >&2; exit 2; }
need_value() { [[ -n "${2:-}" ]] || bad_usage "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --print-cmake-args) print_args=1 ;;
    --no-werror) werror=OFF ;;
    --build-dir|--jobs|--cudnn-root|--cmocka|--data|--bundle|--python|--only|--arch|--budget|\
    --site-packages)
      need_value "$1" "${2:-}"
      case "$1" in
        --build-dir) build_dir="$2" ;;
        --jobs) jobs="$2" ;;
        --cudnn-root) cudnn_root="$2" ;;
        --cmocka) cmocka_dir="$2" ;;
        --data) data_dir="$2" ;;
        --bundle) bundle="$2" ;;
        --python) python="$2" ;;
        --only) only="$2" ;;
        --arch) arch="$2" ;;
        --site-packages) site_override+=("$2") ;;
        --budget)
          [[ "$2" =~ ^([a-z_]+)=([0-9]+)$ && -n "${budget[${BASH_REMATCH[1]}]:-}" ]] ||
            bad_usage "--budget $2: expected STEP=SECONDS with STEP one of ${steps[*]}"
          budget[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}" ;;
      esac
      shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "device-check: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) [[ -z "$out" ]] || bad_usage "extra argument '$1'"; out="$1" ;;
  esac
  shift
done

if [[ -n "$bundle" ]]; then
  [[ -d "$bundle" ]] || bad_usage "--bundle $bundle is not a folder (tools/device-check-bundle.sh makes it)"
  [[ -n "$cmocka_dir" ]] || cmocka_dir="$bundle/cmocka"
  [[ -n "$data_dir" ]] || data_dir="$bundle/fashion-mnist"
  [[ -d "$bundle/zlib" ]] && zlib_dir="$bundle/zlib"
fi
abspath() {
  if [[ -d "$1" ]]; then (cd "$1" && pwd); elif [[ "$1" == /* ]]; then echo "$1"; else echo "$PWD/$1"; fi
}
[[ -n "$cmocka_dir" ]] && cmocka_dir="$(abspath "$cmocka_dir")"
[[ -n "$data_dir" ]] && data_dir="$(abspath "$data_dir")"
[[ -n "$zlib_dir" ]] && zlib_dir="$(abspath "$zlib_dir")"
[[ -n "$cudnn_root" ]] && cudnn_root="$(abspath "$cudnn_root")"
# A path: the harness runs it from other folders and checks it exists.
python="$(command -v "$python" 2>/dev/null || echo "$python")"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs $jobs: a positive number"
for s in ${only//,/ }; do
  [[ -n "${budget[$s]:-}" ]] || bad_usage "--only $s: not a step (${steps[*]})"
done

# The step table: every budget positive, the sum within the 300 s promise.
budget_sum=0
for s in "${steps[@]}"; do
  (( budget[$s] > 0 )) || bad_usage "step $s has no positive budget"
  budget_sum=$(( budget_sum + budget[$s] ))
done
(( budget_sum <= total_budget )) ||
  bad_usage "step budgets add up to ${budget_sum}s, more than ${total_budget}s"

# ---------------------------------------------------------------------------
# The searches. Each sets globals and returns 1 with |why| on failure.

# Where pip puts packages, asked of |python|; without an answer, the usual
# places. --site-packages replaces both.
py_site='import site, sys
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
print("\n".join(dict.fromkeys(dirs)))'
find_site_packages() {
  sp_dirs=()
  local d candidates=()
  if (( ${#site_override[@]} )); then
    for d in "${site_override[@]}"; do [[ -d "$d" ]] && sp_dirs+=("$(abspath "$d")"); done
    sp_how="--site-packages"
    return 0
  fi
  if command -v "$python" >/dev/null 2>&1; then
    while IFS= read -r d; do
      [[ -n "$d" && -d "$d" ]] && sp_dirs+=("$d")
    done < <(timeout "$(left_s)" "$python" -c "$py_site" 2>/dev/null)
  fi
  if (( ${#sp_dirs[@]} )); then sp_how="$python"; return 0; fi
  shopt -s nullglob
  [[ -n "${VIRTUAL_ENV:-}" ]] && candidates+=("$VIRTUAL_ENV"/lib/python3*/site-packages)
  [[ -n "${CONDA_PREFIX:-}" ]] && candidates+=("$CONDA_PREFIX"/lib/python3*/site-packages)
  candidates+=(/usr/local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages
               /usr/lib/python3*/site-packages /usr/lib/python3/dist-packages
               /opt/conda/lib/python3*/site-packages /opt/*/lib/python3*/site-packages
               "$HOME"/.local/lib/python3*/site-packages)
  shopt -u nullglob
  for d in "${candidates[@]}"; do [[ -d "$d" ]] && sp_dirs+=("$d"); done
  sp_how="the usual places ($python gave no answer)"
}

# Seconds left of the step's allowance, at least 1 (10 outside a step).
left_s() {
  local left=$(( ${deadline:-$(( SECONDS + 10 ))} - SECONDS ))
  echo $(( left > 1 ? left : 1 ))
}

# The first of the given paths that exists.
first_of() {
  local f
  for f in "$@"; do [[ -e "$f" ]] && { echo "$f"; return 0; }; done
  return 1
}

# cuDNN under |1| (a folder with include/ and lib/ or lib64/): sets c_inc, c_lib.
cudnn_under() {
  c_inc=""; c_lib=""
  [[ -f "$1/include/cudnn_graph.h" ]] && c_inc="$1/include"
  c_lib="$(first_of "$1"/lib/libcudnn.so "$1"/lib64/libcudnn.so "$1"/lib/libcudnn.so.9 \
           "$1"/lib64/libcudnn.so.9 "$1"/lib/x86_64-linux-gnu/libcudnn.so \
           "$1"/lib/x86_64-linux-gnu/libcudnn.so.9)" || c_lib=""
  [[ -n "$c_inc" && -n "$c_lib" ]]
}

# Sets cmake_lib_args, run_path (library folders for the steps that run),
# bench_path (those of them from wheels: PyTorch's own), and *_where.
search_libs() {
  cmake_lib_args=(); run_path=(); bench_path=(); why=""
  cudnn_where=""; cublaslt_where=""; nccl_where=""
  find_site_packages
  local sp sub where="" f major
  if [[ -n "$cudnn_root" ]]; then
    if ! cudnn_under "$cudnn_root"; then
      why="--cudnn-root $cudnn_root:"
      [[ -z "$c_inc" ]] && why+=" no include/cudnn_graph.h;"
      [[ -z "$c_lib" ]] && why+=" no lib/libcudnn.so or lib/libcudnn.so.9 (nor lib64/);"
      why="${why%;}"
      return 1
    fi
    where="--cudnn-root $cudnn_root"
  else
    for sp in "${sp_dirs[@]}"; do
      for sub in nvidia/cudnn nvidia/cu13; do
        if cudnn_under "$sp/$sub"; then where="wheel $sp/$sub"; break 2; fi
      done
    done
    if [[ -z "$where" ]] && cudnn_under "$cuda_home"; then where="toolkit $cuda_home"; fi
  fi
  if [[ -z "$where" ]]; then
    why="cuDNN 9 not found: no --cudnn-root; no nvidia/cudnn/include/cudnn_graph.h with"
    why+=" nvidia/cudnn/lib/libcudnn.so.9 in the site-packages of $sp_how"
    why+=" (${sp_dirs[*]:-none found}); no include/cudnn_graph.h with lib64/libcudnn.so*"
    why+=" under $cuda_home. Install PyTorch's nvidia-cudnn wheel or pass --cudnn-root DIR"
    return 1
  fi
  if [[ -f "$c_inc/cudnn_version.h" ]]; then
    major="$(sed -n 's/^#define CUDNN_MAJOR \([0-9]*\).*/\1/p' "$c_inc/cudnn_version.h")"
  elif [[ "$c_lib" =~ \.so\.([0-9]+) ]]; then
    major="${BASH_REMATCH[1]}"
  else
    why="cuDNN at $where: no cudnn_version.h beside cudnn_graph.h to tell its version"
    return 1
  fi
  if [[ "$major" != 9 ]]; then
    why="cuDNN at $where is version '$major'; the plugin needs 9"
    return 1
  fi
  if ! first_of "$(dirname "$c_lib")"/libcudnn_graph.so.9 "$(dirname "$c_lib")"/libcudnn_graph.so \
       >/dev/null; then
    why="cuDNN at $where: libcudnn_graph.so.9 is missing beside $c_lib (cuDNN 9 loads it)"
    return 1
  fi
  cudnn_where="cuDNN 9 $where ($(basename "$c_lib"))"
  cmake_lib_args+=("-DTSR_CUDNN_INCLUDE_DIR=$c_inc" "-DTSR_CUDNN_LIBRARY=$c_lib")
  run_path+=("$(dirname "$c_lib")")
  [[ "$where" == toolkit* ]] || bench_path+=("$(dirname "$c_lib")")

  # cuBLASLt: the toolkit's, as CMake's FindCUDAToolkit finds it; else a
  # versioned file (the toolkit's or a wheel's) named to CMake directly.
  local tk_inc tk_lib tk_ver w_inc="" w_lib=""
  shopt -s nullglob
  tk_inc="$(first_of "$cuda_home"/include/cublasLt.h "$cuda_home"/targets/*/include/cublasLt.h)"
  tk_lib="$(first_of "$cuda_home"/lib64/libcublasLt.so "$cuda_home"/targets/*/lib/libcublasLt.so)"
  tk_ver="$(first_of "$cuda_home"/lib64/libcublasLt.so.[0-9]* \
            "$cuda_home"/targets/*/lib/libcublasLt.so.[0-9]*)"
  for sp in "${sp_dirs[@]}"; do
    for sub in nvidia/cu13 nvidia/cublas; do
      f="$(first_of "$sp/$sub"/lib/libcublasLt.so "$sp/$sub"/lib/libcublasLt.so.[0-9]*)" || continue
      w_lib="$f"
      w_inc="$(first_of "$sp/$sub/include/cublasLt.h")"
      break 2
    done
  done
  shopt -u nullglob
  if [[ -n "$tk_inc" && -n "$tk_lib" ]]; then
    cublaslt_where="cuBLASLt toolkit $cuda_home"
  elif [[ -n "$tk_inc" && -n "$tk_ver" ]]; then
    cublaslt_where="cuBLASLt toolkit $tk_ver"
    cmake_lib_args+=("-DCUDA_cublasLt_LIBRARY=$tk_ver")
  elif [[ -n "$w_lib" && ( -n "$tk_inc" || -n "$w_inc" ) ]]; then
    cublaslt_where="cuBLASLt wheel $w_lib"
    cmake_lib_args+=("-DCUDA_cublasLt_LIBRARY=$w_lib")
    [[ -z "$tk_inc" ]] && cmake_lib_args+=("-DCMAKE_C_FLAGS=-isystem ${w_inc%/cublasLt.h}")
    run_path+=("$(dirname "$w_lib")")
    bench_path+=("$(dirname "$w_lib")")
  else
    why="cuBLASLt not found: no include/cublasLt.h with lib64/libcublasLt.so* under $cuda_home,"
    why+=" no nvidia/cu13 or nvidia/cublas lib/libcublasLt.so* (with cublasLt.h) in the"
    why+=" site-packages of $sp_how (${sp_dirs[*]:-none found})"
    return 1
  fi

  # NCCL: nothing of Tessera links it yet; reported, and on the library path.
  f=""
  for sp in "${sp_dirs[@]}"; do
    f="$(first_of "$sp"/nvidia/nccl/lib/libnccl.so.2 "$sp"/nvidia/nccl/lib/libnccl.so)" && break
  done
  [[ -n "$f" ]] || f="$(first_of "$cuda_home"/lib64/libnccl.so.2 \
                         /usr/lib/x86_64-linux-gnu/libnccl.so.2)" || f=""
  if [[ -n "$f" ]]; then
    nccl_where="NCCL $f"
    run_path+=("$(dirname "$f")")
    [[ "$f" == "$cuda_home"* ]] || bench_path+=("$(dirname "$f")")
  else
    nccl_where="NCCL not found (nothing links it yet)"
  fi
  # The toolkit's folder last: cuDNN opens libnvrtc from it at run time.
  run_path+=("$cuda_home/lib64")
  return 0
}

# CMocka from |cmocka_dir|: writes a pkg-config file with the prefix where the
# folder is now into |1|/pkgconfig, and a pkg-config stand-in there when the
# machine has no pkg-config (PKG_CONFIG, as CMake reads it, names another).
# Sets cmocka_args, cmocka_env, cmocka_where, cmocka_libdir.
prepare_cmocka() {
  local gen="$1" libdir version="0" lib pc
  cmocka_args=(); cmocka_env=(); cmocka_libdir=""; why=""
  rm -f "$gen/pkg-config"
  if [[ -z "$cmocka_dir" ]]; then
    if command -v "$pkg_config" >/dev/null 2>&1 && "$pkg_config" --exists cmocka; then
      cmocka_where="system CMocka $("$pkg_config" --modversion cmocka) ($pkg_config)"
      return 0
    fi
    why="no CMocka: the machine has none (pkg-config cmocka); pass --cmocka DIR or --bundle DIR"
    why+=" (tools/device-check-bundle.sh makes one)"
    return 1
  fi
  [[ -f "$cmocka_dir/include/cmocka.h" ]] || {
    why="--cmocka $cmocka_dir: no include/cmocka.h"; return 1; }
  libdir="$(dirname "$(first_of "$cmocka_dir"/lib/libcmocka.so* "$cmocka_dir"/lib64/libcmocka.so* \
            2>/dev/null || echo /none/x)")"
  [[ -d "$libdir" ]] || { why="--cmocka $cmocka_dir: no lib/libcmocka.so*"; return 1; }
  mkdir -p "$gen/pkgconfig" || { why="cannot write $gen/pkgconfig"; return 1; }
  if [[ ! -e "$libdir/libcmocka.so" ]]; then  # the link the -dev package has
    lib="$(first_of "$libdir"/libcmocka.so.*)"
    mkdir -p "$gen/lib" && ln -sfn "$lib" "$gen/lib/libcmocka.so"
    libdir="$gen/lib"
  fi
  pc="$(first_of "$cmocka_dir"/lib/pkgconfig/cmocka.pc "$cmocka_dir"/lib64/pkgconfig/cmocka.pc \
        2>/dev/null)" && version="$(sed -n 's/^Version: *//p' "$pc")"
  cat >"$gen/pkgconfig/cmocka.pc" <<EOF
# Written by tools/device-check.sh for $cmocka_dir
prefix=$cmocka_dir
libdir=$libdir
includedir=\${prefix}/include

Name: cmocka
Description: The cmocka unit testing library
Version: ${version:-0}
Libs: -L\${libdir} -lcmocka
Cflags: -I\${includedir}
EOF
  cmocka_env=("PKG_CONFIG_PATH=$gen/pkgconfig")
  cmocka_libdir="$libdir"
  cmocka_where="CMocka ${version:-?} at $cmocka_dir"
  if ! command -v "$pkg_config" >/dev/null 2>&1; then
    # CMake's FindPkgConfig asks --version, --exists, --modversion, --libs*,
    # --cflags* and --variable=...; this answers them for cmocka alone.
    cat >"$gen/pkg-config" <<EOF
#!/bin/sh
# pkg-config stand-in for cmocka only, written by tools/device-check.sh
for a in "\$@"; do [ "\$a" = --version ] && { echo 0.29.2; exit 0; }; done
case " \$* " in *" cmocka "*) ;; *) echo "device-check pkg-config: only cmocka is known" >&2; exit 1 ;; esac
for a in "\$@"; do
  case "\$a" in
    --modversion) echo "${version:-0}"; exit 0 ;;
    --libs-only-l) echo "-lcmocka"; exit 0 ;;
    --libs-only-L) echo "-L$libdir"; exit 0 ;;
    --libs) echo "-L$libdir -lcmocka"; exit 0 ;;
    --cflags|--cflags-only-I) echo "-I$cmocka_dir/include"; exit 0 ;;
    --variable=prefix) echo "$cmocka_dir"; exit 0 ;;
    --variable=libdir) echo "$libdir"; exit 0 ;;
    --variable=includedir) echo "$cmocka_dir/include"; exit 0 ;;
  esac
done
echo
EOF
    chmod +x "$gen/pkg-config"
    cmocka_args=("-DPKG_CONFIG_EXECUTABLE=$gen/pkg-config")
    cmocka_where+=" (a pkg-config stand-in: the machine has no $pkg_config)"
  fi
  lib="$(ldd "$libdir/libcmocka.so" 2>&1)"
  if grep -q "not found" <<<"$lib"; then
    why="$libdir/libcmocka.so does not load here: $(grep -m1 'not found' <<<"$lib")"
    return 1
  fi
  return 0
}

idx_files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte
           t10k-labels-idx1-ubyte)
# Sets data_where; checks each gzip file whole.
check_data() {
  local dir="${data_dir:-/usr/share/datasets/fashion-mnist}" f path missing=()
  why=""
  for f in "${idx_files[@]}"; do
    path="$(first_of "$dir/$f" "$dir/$f.gz")" || { missing+=("${f}[.gz]"); continue; }
    if [[ "$path" == *.gz ]] && ! gzip -t "$path" 2>/dev/null; then
      why="Fashion-MNIST: $path is not a whole gzip file"; return 1
    fi
  done
  if (( ${#missing[@]} )); then
    why="Fashion-MNIST: $dir lacks ${missing[*]}; pass --data DIR or --bundle DIR"
    why+=" (tools/device-check-bundle.sh copies it)"
    return 1
  fi
  data_dir="$dir"
  data_where="Fashion-MNIST at $dir"
  [[ -n "$data_given" ]] || data_where+=" (default)"
  return 0
}
data_given="$data_dir"

# The project's default build type, as CI and bench/run build it: -Werror is
# proven with it.
base_cmake_args() {
  cmake_args=("-DTSR_WERROR=$werror" -DTSR_BUILD_TESTS=ON
              -DBUILD_TESTING=ON -DTSR_PLUGIN_CUDA=ON -DTSR_PLUGIN_ONEDNN=OFF
              -DTSR_PLUGIN_OPENCL=OFF "-DCMAKE_CUDA_COMPILER=$cuda_home/bin/nvcc"
              "-DCMAKE_CUDA_ARCHITECTURES=${arch:-80;90}")
}

join_path() {  # folders, once each, in order, joined with ':'
  local d joined=":"
  for d in "$@"; do [[ "$joined" == *":$d:"* ]] || joined+="$d:"; done
  joined="${joined#:}"
  echo "${joined%:}"
}

if [[ "$print_args" == 1 ]]; then
  gen="$(mktemp -d "${TMPDIR:-/tmp}/device-check.XXXXXX")"
  status=0
  if search_libs; then
    echo "found: $cudnn_where"; echo "found: $cublaslt_where"; echo "found: $nccl_where"
  else
    echo "device-check: FAIL: $why"; status=1
  fi
  if [[ -n "$cmocka_dir" ]]; then
    if prepare_cmocka "$gen"; then echo "found: $cmocka_where"; else
      echo "device-check: FAIL: $why"; status=1; fi
  fi
  if [[ -n "$data_dir" ]]; then
    if check_data; then echo "found: $data_where"; else
      echo "device-check: FAIL: $why"; status=1; fi
  fi
  if (( status == 0 )); then
    base_cmake_args
    for a in "${cmake_args[@]}" "${cmake_lib_args[@]}" "${cmocka_args[@]}"; do
      echo "cmake: $a"
    done
    echo "env: LD_LIBRARY_PATH=$(join_path "${run_path[@]}" ${cmocka_libdir:+"$cmocka_libdir"})"
    echo "env: bench LD_LIBRARY_PATH=$(join_path "${bench_path[@]}")"
    for a in "${cmocka_env[@]}"; do echo "env: $a"; done
    echo "files: $gen"
  else
    rm -rf "$gen"
  fi
  exit "$status"
fi

# ---------------------------------------------------------------------------
# The run.
[[ -n "$out" ]] || { echo "device-check: OUTDIR is missing" >&2; usage >&2; exit 2; }
if [[ "$dry" == 1 ]]; then
  [[ -n "$build_dir" ]] || bad_usage "--dry-run needs --build-dir (an existing build tree)"
  [[ -f "$build_dir/CMakeCache.txt" ]] || bad_usage "--build-dir $build_dir is not a build tree"
fi
build="$(abspath "${build_dir:-$root/build-device-check}")"
mkdir -p "$out" || bad_usage "cannot make $out"
out="$(cd "$out" && pwd)"
[[ "$build" == "$out" || "$build" == "$out"/* ]] &&
  bad_usage "the build tree must not be inside OUTDIR (OUTDIR comes back whole)"
# What earlier runs (this layout and the one before) left in OUTDIR.
for f in summary.txt logs.tar.gz conformance-cuda.md bench.json toolkit.log gpu.log build.log \
         load.log conformance.log train.log bench.log conformance-cuda.xml; do
  rm -f "${out:?}/$f"
done
stage="$(mktemp -d "${TMPDIR:-/tmp}/device-check-logs.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
gen="$build/device-check"  # the generated pkg-config file: the build tree refers to it
[[ "$dry" == 1 ]] && gen="$stage/generated"

summary="$out/summary.txt"
failed=0
start=$SECONDS
step_start=$SECONDS
deadline=$SECONDS
{
  echo "tools/device-check.sh$([[ $dry == 1 ]] && echo ' --dry-run') on $(hostname 2>/dev/null)," \
       "$(date -u +%FT%TZ)"
  echo "source $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '(no git)')" \
       "$([[ -n "$(git -C "$root" --no-optional-locks status --porcelain 2>/dev/null | head -1)" ]] &&
          echo '(uncommitted changes)')"
  echo "build tree $build"
  printf '%-12s %-8s %5s  %s\n' step status time detail
} >"$summary"
cat "$summary"

record() {  # step, status, detail
  printf '%-12s %-8s %4ss  %s\n' "$1" "$2" "$(( SECONDS - step_start ))" "$3" | tee -a "$summary"
  [[ "$2" == "FAIL" ]] && failed=1
  return 0
}
wanted() {  # step: whether this run includes it
  [[ "$checks" == *" $1 "* || -z "$only" || ",$only," == *",$1,"* ]]
}
begin() {  # step: starts its clock; false when the step is not wanted
  wanted "$1" || return 1
  step_start=$SECONDS
  local left=$(( total_budget - (SECONDS - start) ))
  local want=${budget[$1]}
  (( left < want )) && want=$left
  deadline=$(( SECONDS + want ))
  log="$stage/$1.log"
  : >"$log"
  return 0
}
# run CMD...: under timeout with what is left of the step's allowance, output
# to the step's log; CMD's status, 124 when the time ran out.
run() {
  local left=$(( deadline - SECONDS ))
  if (( left < 1 )); then
    echo "device-check: no time left for: $*" >>"$log"
    return 124
  fi
  echo "\$ $*" >>"$log"
  timeout --kill-after=2 "$left" "$@" >>"$log" 2>&1
}
timed_out() { [[ "$1" == 124 || "$1" == 137 ]]; }

record steps ok "${#steps[@]} steps, budgets ${budget_sum}s of ${total_budget}s$(
  [[ -n "$only" ]] && echo "; --only $only")"

# 1. toolkit
toolkit_ok=0
if begin toolkit; then
  problems=()
  run "$cuda_home/bin/nvcc" --version || problems+=("no nvcc at $cuda_home/bin (set CUDA_HOME)")
  nvcc_version="$(sed -n 's/.*release \([0-9.]*\).*/\1/p' "$log" | head -1)"
  cmake_version="$(cmake --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.]*\).*/\1/p')"
  if [[ -z "$cmake_version" ]]; then
    problems+=("no cmake")
  elif [[ "$(printf '%s\n' 3.25 "$cmake_version" | sort -V | head -1)" != 3.25 ]]; then
    problems+=("cmake $cmake_version is older than 3.25")
  fi
  cc="${CC:-$(command -v cc || command -v gcc || echo cc)}"
  if ! command -v "$cc" >/dev/null 2>&1; then
    problems+=("no C compiler ($cc)")
  elif echo '#include <zlib.h>' | run "$cc" -E -x c - -o /dev/null; then
    zlib_dir=""  # the machine's own
  elif [[ -n "$zlib_dir" && -f "$zlib_dir/include/zlib.h" ]]; then
    :
  else
    problems+=("no zlib.h (zlib1g-dev), and no zlib in --bundle")
  fi
  if (( ${#problems[@]} )); then
    record toolkit FAIL "$(IFS=';'; echo "${problems[*]}")"
  else
    toolkit_ok=1
    record toolkit ok "nvcc ${nvcc_version:-?}, cmake $cmake_version, $cc$(
      [[ -n "$zlib_dir" ]] && echo ", zlib from $zlib_dir")"
  fi
fi

# 2. gpu: and the architecture to build for it.
if begin gpu; then
  if [[ "$dry" == 1 ]]; then
    record gpu skipped "--dry-run"
  elif run nvidia-smi -L && grep -q "GPU 0" "$log"; then
    run nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
    caps="$(timeout "$(left_s)" nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
            tr -d ' .' | sort -u | paste -sd ';')"
    [[ -z "$arch" && "$caps" =~ ^[0-9\;]+$ ]] && arch="$caps"
    record gpu ok "$(grep -m1 'GPU 0' "$log"); building for sm_${arch:-80;90}"
  else
    record gpu FAIL "nvidia-smi lists no GPU (see gpu.log)"
  fi
fi

# 3. libs
libs_ok=0
if begin libs; then
  if search_libs; then
    libs_ok=1
    record libs ok "$cudnn_where; $cublaslt_where; $nccl_where"
  else
    record libs FAIL "$why"
  fi
  echo "site-packages searched (from $sp_how): ${sp_dirs[*]:-none}" >>"$log"
  if [[ "$dry" == 1 ]]; then
    # The search itself on fake wheel layouts: what the target image has,
    # and what it must refuse.
    fake_ok=1
    for case in wheels wheels_without_cudnn; do
      if ! run "$root/plugins/cuda/tests/device_check_search.sh" "$root" "$case"; then
        fake_ok=0
        record libs FAIL "the search on a fake wheel layout ($case) failed (see libs.log)"
      fi
    done
    (( fake_ok )) && record libs ok "on fake wheel layouts the search finds the wheels' cuDNN, cuBLASLt, NCCL and fails without cuDNN"
  fi
fi

# 4. cmocka
cmocka_ok=0
if begin cmocka; then
  if prepare_cmocka "$gen"; then
    cmocka_ok=1
    if [[ -n "$cmocka_dir" ]]; then
      # What CMake will be told, asked the way CMake asks it.
      asked="$pkg_config"
      [[ -x "$gen/pkg-config" ]] && asked="$gen/pkg-config"
      flags="$(env "${cmocka_env[@]}" "$asked" --cflags cmocka 2>>"$log")"
      echo "$asked --cflags cmocka: $flags" >>"$log"
      if [[ "$flags" != *"-I$cmocka_dir/include"* ]]; then
        cmocka_ok=0
        why="$asked --cflags cmocka gives '$flags', not $cmocka_dir/include"
      fi
    fi
  fi
  if (( cmocka_ok )); then record cmocka ok "$cmocka_where"; else record cmocka FAIL "$why"; fi
fi

# 5. data
if begin data; then
  if check_data; then record data ok "$data_where"; else record data FAIL "$why"; fi
fi

ld_path="$(join_path "${run_path[@]}" ${cmocka_libdir:+"$cmocka_libdir"})${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench_ld_path="$(join_path "${bench_path[@]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench_ld_path="${bench_ld_path#:}"
base_cmake_args
cmake_args+=("${cmake_lib_args[@]}" "${cmocka_args[@]}")
[[ -n "$zlib_dir" ]] && cmake_args+=("-DZLIB_ROOT=$zlib_dir")
printf '%s\n' "${cmake_args[@]}" >"$stage/cmake-args.txt"
echo "LD_LIBRARY_PATH=$ld_path" >>"$stage/cmake-args.txt"

# 6. build: only what the steps run.
targets=(tessera tessera-ref tessera-cuda tsr-info tsr-conformance tsr-train tsr-bench-worker
         test_cuda_allocator test_cuda_engine_select test_cuda_plan_key test_cuda_matmul_layout
         test_cuda_plugin_entry test_cuda_loads_through_core)
plugin="$build/lib/libtessera-cuda.so"
if begin build; then
  if [[ "$dry" == 1 ]]; then
    missing=()
    for t in lib/libtessera-cuda.so lib/libtessera-ref.so bin/tsr-info bin/tsr-conformance \
             bin/tsr-train bin/tsr-bench-worker; do
      [[ -e "$build/$t" ]] || missing+=("$t")
    done
    if (( ${#missing[@]} )); then
      record build FAIL "$build lacks ${missing[*]}"
    else
      record build ok "reused $build (not rebuilt); a real run configures with ${#cmake_args[@]} arguments (cmake-args.txt)"
    fi
  elif (( ! toolkit_ok || ! libs_ok || ! cmocka_ok )); then
    record build FAIL "not configured: the toolkit, libs or cmocka check failed"
  else
    generator=()
    [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
    run env "${cmocka_env[@]}" cmake -S "$root" -B "$build" "${generator[@]}" "${cmake_args[@]}"
    code=$?
    if (( code != 0 )); then
      timed_out "$code" && detail="out of time" ||
        detail="$(grep -m1 -A1 'CMake Error' "$log" | tail -1 | sed 's/^ *//')"
      record build FAIL "configure: ${detail:-exit $code} (see build.log)"
    else
      found="$(grep -m1 -o 'CUDA plugin: CUDA .*' "$log")"
      run env "${cmocka_env[@]}" cmake --build "$build" -j"$jobs" --target "${targets[@]}"
      code=$?
      if (( code != 0 )); then
        timed_out "$code" && detail="out of time" ||
          detail="$(grep -m1 -E 'error:|Error [0-9]' "$log" | cut -c1-200)"
        record build FAIL "build: ${detail:-exit $code} (see build.log)"
      elif deps="$(LD_LIBRARY_PATH="$ld_path" ldd "$plugin" 2>&1)"; echo "$deps" >>"$log"
           grep -q "not found" <<<"$deps"; then
        record build FAIL "libtessera-cuda.so: $(grep -m1 'not found' <<<"$deps" | sed 's/^[[:space:]]*//')"
      else
        record build ok "${#targets[@]} targets for sm_${arch:-80;90}; $found"
      fi
    fi
  fi
fi
export LD_LIBRARY_PATH="$ld_path"

# 7. load: through the core, as an application would.
if begin load; then
  if [[ ! -f "$plugin" ]]; then
    record load FAIL "no plugin at $plugin"
  else
    run "$build/bin/tsr-info" --plugin "$plugin"
    if grep -q "cuda:0" "$log"; then
      record load ok "tsr-info lists cuda:0$([[ $dry == 1 ]] && echo ' (this machine has a GPU)')"
    elif grep -q "unavailable: " "$log"; then
      reason="$(grep -m1 -o 'probe: unavailable: .*' "$log" | cut -c1-160)"
      if [[ "$dry" == 1 ]]; then
        record load ok "loads without a GPU; $reason"
      else
        record load FAIL "probe on a GPU machine: $reason"
      fi
    else
      record load FAIL "tsr-info shows neither cuda:0 nor the probe's reason (see load.log)"
    fi
  fi
fi

# 8. ctest
if begin ctest; then
  if [[ "$dry" == 1 ]]; then
    # Listed, not run: this dry run is one of them.
    run ctest --test-dir "$build" -N -L cuda
    count="$(sed -n 's/^Total Tests: *//p' "$log")"
    if [[ "${count:-0}" -gt 0 ]] && grep -q "cuda_plugin_entry" "$log"; then
      record ctest ok "$count tests labelled cuda (listed; a real run runs them)"
    else
      record ctest FAIL "no tests labelled cuda in $build (configured with tests off?)"
    fi
  elif [[ ! -f "$build/CTestTestfile.cmake" ]]; then
    record ctest FAIL "no test tree in $build"
  else
    run ctest --test-dir "$build" -L cuda -E '^cuda_device_check_dry_run$' -j4 \
      --output-on-failure --timeout 60
    code=$?
    result="$(grep -m1 'tests passed' "$log")"
    if (( code == 0 )); then
      record ctest ok "${result:-passed}"
    else
      timed_out "$code" && result="out of time; $result"
      record ctest FAIL "${result:-exit $code}: $(
        grep -E '^[[:space:]]*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess|Exception|Not Run)' "$log" |
        sed 's/^[[:space:]]*[0-9]* - //' | paste -sd ',' | cut -c1-200)"
    fi
    cp "$build/Testing/Temporary/LastTest.log" "$stage/ctest-LastTest.log" 2>/dev/null
  fi
fi

# 9. conformance
if begin conformance; then
  if [[ ! -f "$plugin" ]]; then
    record conformance FAIL "no plugin"
  else
    # Every API group and op is a child process that opens CUDA afresh (a
    # second or two each): eight at a time, and a hung one is killed and
    # reported (--timeout) before the step's own time runs out.
    run "$build/bin/tsr-conformance" --plugin "$plugin" --report "$out/conformance-cuda.md" \
      --junit "$stage/conformance-cuda.xml" --jobs $(( jobs < 8 ? jobs : 8 )) \
      --timeout $(( budget[conformance] * 2 / 3 ))
    code=$?
    verdict="$(grep -m1 '^Verdict' "$log" | cut -c1-200)"
    if [[ "$dry" == 1 && "$code" == 2 ]] && grep -q "unavailable: " "$log"; then
      record conformance ok "skipped as it must be without a GPU"
    elif [[ "$code" == 0 ]]; then
      record conformance ok "${verdict#Verdict: }"
    else
      timed_out "$code" && verdict="out of time; $verdict"
      record conformance FAIL "exit $code: ${verdict#Verdict: } (conformance-cuda.md)"
    fi
  fi
fi

# 10, 11. train: one epoch each on cuda:0 (the dry run: the options exist).
train="$build/bin/tsr-train"
for model in mlp cnn; do
  begin "train_$model" || continue
  if [[ ! -x "$train" ]]; then
    record "train_$model" FAIL "tsr-train was not built"
  elif [[ "$dry" == 1 ]]; then
    if run "$train" --help && grep -q -- "--data" "$log" && grep -q -- "--device" "$log"; then
      record "train_$model" ok "tsr-train takes --model $model --device cuda:0 --epochs 1 --data (not run: no GPU)"
    else
      record "train_$model" FAIL "tsr-train --help lacks --data or --device (see train_$model.log)"
    fi
  else
    (cd "$stage" && run env TSR_FALLBACK=warn "$train" --model "$model" --device cuda:0 \
       --epochs 1 --data "$data_dir" --metrics "$stage/train-$model")
    code=$?
    line="$(grep -m1 '^epoch 1/1' "$log" | sed 's/  */ /g')"
    accuracy="$(tail -1 "$stage/train-$model.csv" 2>/dev/null | cut -d, -f3)"
    fallbacks="$(grep -c 'falls back to' "$log")"
    if (( code != 0 )); then
      timed_out "$code" && line="out of time"
      record "train_$model" FAIL "exit $code: ${line:-$(tail -1 "$log" | cut -c1-200)}"
    elif ! awk -v a="${accuracy:-0}" 'BEGIN { exit !(a >= 0.80) }'; then
      record "train_$model" FAIL "test accuracy ${accuracy:-?} < 0.80: $line"
    else
      record "train_$model" ok "$line; $fallbacks ops fell back"
    fi
  fi
done

# 12. bench: the harness bench/run ends in, Tessera on cuda:0 and PyTorch on
# the same GPU. Not bench/run itself: its setup installs, builds every target
# into build-bench/ and compiles the libtorch peer.
# The verdict from the run's JSON: PyTorch measured every row; Tessera ran
# each row or said "not yet".
bench_verdict='import json, sys
run = json.load(open(sys.argv[1]))
torch = next((p for p in run["participants"] if p["key"] == "torch_pypi"), {})
problems, ran, not_yet = [], [], []
if not torch.get("available"):
    problems.append("PyTorch unavailable: " + torch.get("reason", "?"))
for row in run["rows"]:
    res = row["results"]
    t, p = res.get("tessera", {}), res.get("torch_pypi", {})
    if t.get("status") == "ok":
        ran.append(row["key"])
    elif t.get("status") == "not_yet":
        not_yet.append(row["key"])
    else:
        problems.append("%s: Tessera %s %s" % (row["key"], t.get("status"), t.get("reason", "")))
    if torch.get("available") and p.get("status") != "ok":
        problems.append("%s: PyTorch %s %s" % (row["key"], p.get("status"), p.get("reason", "")))
print("Tessera ran %d of %d rows%s; %s" % (len(ran), len(run["rows"]),
      " (not yet: %s)" % ", ".join(not_yet) if not_yet else "", torch.get("title", "PyTorch")))
for problem in problems:
    print("problem: " + problem[:200])
sys.exit(1 if problems else 0)'
if begin bench; then
  resolve="import sys; sys.path.insert(0, '$root/bench/harness'); from workloads import BY_KEY; \
missing = [w for w in '$workloads'.split(',') if w not in BY_KEY]; \
print('unknown workloads:', missing) if missing else print('workloads resolve:', '$workloads'); \
sys.exit(1 if missing else 0)"
  if ! command -v "$python" >/dev/null 2>&1; then
    record bench FAIL "no $python (--python PY: the Python with PyTorch)"
  elif ! run "$python" -c "$resolve"; then
    record bench FAIL "$(tail -1 "$log")"
  elif ! { run "$python" "$root/bench/harness/main.py" --help && grep -q -- "--torch-device" "$log"; }; then
    record bench FAIL "bench/harness/main.py does not take --torch-device (see bench.log)"
  elif [[ "$dry" == 1 ]]; then
    torch_note="no PyTorch in $python"
    run "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' &&
      torch_note="$(grep -m1 '^torch ' "$log") at $python"
    record bench ok "$workloads resolve, the harness takes --torch-device; $torch_note (not run: no GPU)"
  elif [[ ! -x "$build/bin/tsr-bench-worker" ]]; then
    record bench FAIL "tsr-bench-worker was not built"
  else
    rm -rf "$build/bench-logs" "$stage/bench"
    # One core each: on a GPU the host threads only queue work, and a single
    # configuration per participant skips the tuning phase.
    run env TSR_DEVICE=cuda:0 LD_LIBRARY_PATH="$bench_ld_path" "$python" \
      "$root/bench/harness/main.py" --root "$root" --build "$build" --venv-python "$python" \
      --libtorch-peer "" --quick --workloads "$workloads" --peers torch_pypi \
      --torch-device cuda:0 --cores 1 --rounds 2 --docs no --out "$stage/bench"
    code=$?
    cp -r "$build/bench-logs" "$stage/bench-workers" 2>/dev/null
    jsons=("$stage"/bench/*.json)
    if [[ -f "${jsons[0]}" ]]; then
      cp "${jsons[0]}" "$out/bench.json"
      verdict="$("$python" -c "$bench_verdict" "${jsons[0]}" 2>&1)"
      vcode=$?
      echo "$verdict" >>"$log"
    fi
    if timed_out "$code"; then
      record bench FAIL "out of time (see bench.log)"
    elif [[ ! -f "${jsons[0]}" ]]; then
      record bench FAIL "exit $code, no results: $(tail -1 "$log" | cut -c1-200)"
    elif (( code != 0 || vcode != 0 )); then
      record bench FAIL "$(head -1 <<<"$verdict"); $(grep -m1 '^problem: ' <<<"$verdict")"
    else
      record bench ok "$(head -1 <<<"$verdict"); bench.json, table below"
    fi
  fi
fi

# 13. pack: every log in one archive; OUTDIR holds at most 8 files.
begin pack
rm -f "$log"  # tar would read it while writing to it
mds=("$stage"/bench/*.md)
if [[ -f "${mds[0]}" ]]; then
  { echo; echo "bench: bench/harness --quick, Tessera on cuda:0, PyTorch on cuda:0"; cat "${mds[0]}"; } \
    >"$stage/bench-table.txt"
fi
if [[ "$dry" == 0 ]]; then
  for f in CMakeCache.txt CMakeFiles/CMakeConfigureLog.yaml CMakeFiles/CMakeError.log; do
    [[ -f "$build/$f" ]] && cp "$build/$f" "$stage/cmake-$(basename "$f")"
  done
fi
cp "$summary" "$stage/summary.txt"
tar_err="$(timeout "$(left_s)" \
           tar -czf "$out/logs.tar.gz" -C "$stage" --exclude=./generated . 2>&1)"
code=$?
shopt -s nullglob dotglob
entries=("$out"/*)
shopt -u nullglob dotglob
names="$(printf '%s\n' "${entries[@]##*/}" | paste -sd ' ')"
if (( code != 0 )); then
  record pack FAIL "tar: exit $code: $tar_err"
elif (( ${#entries[@]} > max_files )); then
  record pack FAIL "OUTDIR holds ${#entries[@]} entries, more than $max_files: $names"
else
  record pack ok "${#entries[@]} files in $out: $names"
fi

step_start=$start
elapsed=$(( SECONDS - start ))
(( elapsed > total_budget )) && failed=1
record total "$([[ $failed == 0 ]] && echo ok || echo FAIL)" \
  "${elapsed}s of ${total_budget}s$([[ $dry == 1 ]] && echo ', dry run')"
[[ -f "$stage/bench-table.txt" ]] && tee -a "$summary" <"$stage/bench-table.txt"
exit "$failed"
