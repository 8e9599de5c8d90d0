#!/usr/bin/env bash
# Checks Tessera's CUDA plugin on a machine with an NVIDIA GPU, within 8 minutes:
#
#   tools/device-check.sh OUTDIR [--dry-run] [--build-dir DIR] [--jobs N]
#
#   1. toolkit     nvcc and cuDNN 9 headers at /usr/local/cuda (or CUDA_HOME)
#   2. gpu         nvidia-smi lists a GPU (skipped by --dry-run)
#   3. build       configures and builds Tessera with the CUDA plugin (sm_80, sm_90)
#                  into OUTDIR/build, or reuses --build-dir when it is a build tree
#   4. load        tsr-info loads the plugin: devices, or the probe's reason
#   5. conformance tsr-conformance on the plugin: certified on a GPU; with
#                  --dry-run it must be skipped, with the probe's reason
#   6. train       tsr-train --model cnn --device cuda --epochs 1 (dry: --help)
#   7. bench       the bench/ workloads with TSR_DEVICE=cuda:0 beside the PyTorch
#                  found there, on the GPU too (--torch-device cuda: synchronized,
#                  no fall-back to the CPU) (dry: the workload list resolves and
#                  the harness takes --torch-device)
#
# Logs go to OUTDIR/<step>.log, results to OUTDIR (conformance report, training
# log, bench JSON) and a one-line-per-step summary to OUTDIR/summary.txt. Every
# step runs under `timeout`; the budgets add up to at most 480 seconds and a
# step never gets more than what is left of them. Exit status: 0 when every
# step that ran passed, 1 otherwise, 2 for bad arguments.
#
# --dry-run does everything that needs no GPU (so it passes on a machine
# without one, and ctest runs it: cuda_device_check_dry_run). It needs
# --build-dir pointing at an existing build, so CI never rebuilds for it.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=""
dry=0
build_dir=""
jobs="$(nproc 2>/dev/null || echo 4)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --build-dir) build_dir="${2:-}"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    --jobs) jobs="${2:-}"; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "device-check: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) if [[ -z "$out" ]]; then out="$1"; else echo "device-check: extra argument '$1'" >&2; exit 2; fi ;;
  esac
  shift
done
if [[ -z "$out" ]]; then
  echo "device-check: OUTDIR is missing" >&2
  usage >&2
  exit 2
fi
if [[ "$dry" == 1 && -z "$build_dir" ]]; then
  echo "device-check: --dry-run needs --build-dir (an existing build tree)" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"

# Step table: name, budget in seconds. The total is the 8-minute promise.
steps=(toolkit gpu build load conformance train bench)
declare -A budget=([toolkit]=10 [gpu]=10 [build]=240 [load]=20 [conformance]=60 [train]=75
                   [bench]=65)
total_budget=480

summary="$out/summary.txt"
: >"$summary"
failed=0
start=$SECONDS
say() { echo "device-check: $*"; }
record() {  # step, status, detail
  printf '%-12s %-8s %s\n' "$1" "$2" "$3" | tee -a "$summary"
  [[ "$2" == "FAIL" ]] && failed=1
  return 0
}
# Seconds step $1 may use: its budget, or what is left of the total if less.
allowance() {
  local left=$(( total_budget - (SECONDS - start) ))
  local want=${budget[$1]}
  (( left < want )) && want=$left
  (( want < 1 )) && want=1
  echo "$want"
}
# run STEP CMD...: runs CMD under timeout with output in OUTDIR/STEP.log;
# returns CMD's status (124 on timeout).
run() {
  local step="$1"; shift
  timeout --kill-after=5 "$(allowance "$step")" "$@" >>"$out/$step.log" 2>&1
}

# The step table itself: every budget a positive number, the sum within 480 s.
sum=0
for s in "${steps[@]}"; do
  b="${budget[$s]:-}"
  if ! [[ "$b" =~ ^[0-9]+$ ]] || (( b <= 0 )); then
    record steps FAIL "step '$s' has no positive budget"
  fi
  sum=$(( sum + ${b:-0} ))
done
if (( sum > total_budget )); then
  record steps FAIL "budgets add up to ${sum}s, more than ${total_budget}s"
else
  record steps ok "${#steps[@]} steps, budgets ${sum}s of ${total_budget}s"
fi

# 1. toolkit
: >"$out/toolkit.log"
if run toolkit "$cuda_home/bin/nvcc" --version && [[ -f "$cuda_home/include/cudnn_graph.h" ]] &&
   [[ -f "$cuda_home/include/cublasLt.h" ]]; then
  cudnn="$(sed -n 's/^#define CUDNN_MAJOR \([0-9]*\).*/\1/p' "$cuda_home/include/cudnn_version.h")"
  nvcc_version="$(sed -n 's/.*release \([0-9.]*\).*/\1/p' "$out/toolkit.log" | head -1)"
  if [[ "$cudnn" == 9 ]]; then
    record toolkit ok "nvcc $nvcc_version, cuDNN $cudnn at $cuda_home"
  else
    record toolkit FAIL "cuDNN major is '$cudnn', the plugin needs 9"
  fi
else
  record toolkit FAIL "no nvcc, cuDNN or cuBLASLt headers under $cuda_home (see toolkit.log)"
fi

# 2. gpu
: >"$out/gpu.log"
if [[ "$dry" == 1 ]]; then
  record gpu skipped "--dry-run"
elif run gpu nvidia-smi -L && grep -q "GPU 0" "$out/gpu.log"; then
  run gpu nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  record gpu ok "$(grep -m1 'GPU 0' "$out/gpu.log")"
else
  record gpu FAIL "nvidia-smi lists no GPU (see gpu.log)"
fi

# 3. build
: >"$out/build.log"
if [[ -n "$build_dir" && -f "$build_dir/CMakeCache.txt" ]]; then
  build="$(cd "$build_dir" && pwd)"
  if [[ "$dry" == 1 ]]; then
    if [[ -f "$build/lib/libtessera-cuda.so" && -x "$build/bin/tsr-conformance" &&
          -x "$build/bin/tsr-info" ]]; then
      record build ok "reused $build (plugin, tsr-conformance, tsr-info present)"
    else
      record build FAIL "$build lacks lib/libtessera-cuda.so, bin/tsr-conformance or bin/tsr-info"
    fi
  elif run build cmake --build "$build" -j"$jobs" --target tessera-cuda tsr-conformance \
         tsr-info tsr-train tsr-bench-worker; then
    record build ok "rebuilt in $build"
  else
    record build FAIL "build in $build failed or ran out of time (see build.log)"
  fi
elif [[ "$dry" == 1 ]]; then
  record build FAIL "--build-dir $build_dir is not a build tree"
  build=""
else
  build="$out/build"
  if run build cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTSR_BUILD_TESTS=OFF \
       "-DCMAKE_CUDA_ARCHITECTURES=80;90" -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" &&
     run build cmake --build "$build" -j"$jobs" --target tessera-cuda tsr-conformance tsr-info \
       tsr-train tsr-bench-worker; then
    record build ok "$build (sm_80, sm_90)"
  else
    record build FAIL "configure or build failed or ran out of time (see build.log)"
  fi
fi
plugin="${build:+$build/lib/libtessera-cuda.so}"

# 4. load: through the core, as an application would.
: >"$out/load.log"
if [[ -z "$plugin" || ! -f "$plugin" ]]; then
  record load FAIL "no plugin to load"
else
  run load "$build/bin/tsr-info" --plugin "$plugin"
  if grep -q "cuda:0" "$out/load.log"; then
    record load ok "tsr-info lists cuda:0"
  elif grep -q "unavailable: " "$out/load.log"; then
    reason="$(grep -m1 -o 'probe: unavailable: .*' "$out/load.log")"
    if [[ "$dry" == 1 ]]; then
      record load ok "loads without a GPU; $reason"
    else
      record load FAIL "probe on a GPU machine: $reason"
    fi
  else
    record load FAIL "tsr-info shows neither cuda:0 nor the probe's reason (see load.log)"
  fi
fi

# 5. conformance
: >"$out/conformance.log"
if [[ -z "$plugin" || ! -f "$plugin" ]]; then
  record conformance FAIL "no plugin"
else
  run conformance "$build/bin/tsr-conformance" --plugin "$plugin" \
    --report "$out/conformance-cuda.md" --junit "$out/conformance-cuda.xml"
  code=$?
  verdict="$(grep -m1 '^Verdict' "$out/conformance.log" || true)"
  if [[ "$dry" == 1 ]]; then
    if [[ "$code" == 2 ]] && grep -q "unavailable: " "$out/conformance.log"; then
      record conformance ok "skipped as it must be without a GPU: ${verdict#Verdict: }"
    elif [[ "$code" == 0 ]]; then
      record conformance ok "certified (this machine has a GPU)"
    else
      record conformance FAIL "exit $code: $verdict"
    fi
  elif [[ "$code" == 0 ]]; then
    record conformance ok "$verdict"
  else
    record conformance FAIL "exit $code: $verdict (report: conformance-cuda.md)"
  fi
fi

# 6. train
: >"$out/train.log"
train="${build:+$build/bin/tsr-train}"
if [[ -z "$train" || ! -x "$train" ]]; then
  if [[ "$dry" == 1 ]]; then
    record train skipped "tsr-train is not built in $build_dir"
  else
    record train FAIL "tsr-train was not built"
  fi
elif [[ "$dry" == 1 ]]; then
  if run train "$train" --help && grep -q -- "--device" "$out/train.log"; then
    record train ok "tsr-train takes --model cnn --device cuda --epochs 1 (not run: no GPU)"
  else
    record train FAIL "tsr-train --help failed (see train.log)"
  fi
else
  if run train env TSR_FALLBACK=warn "$train" --model cnn --device cuda --epochs 1; then
    record train ok "$(grep -i -m1 'accuracy' "$out/train.log" || echo 'one epoch on cuda')"
  else
    record train FAIL "exit $? (see train.log)"
  fi
fi

# 7. bench: the workloads bench/harness knows, Tessera on cuda:0 and PyTorch on
# the same GPU.
: >"$out/bench.log"
workloads="sgemm_1024,add_16M,conv,mlp_train,cnn_train"
python="${TSR_BENCH_PYTHON:-}"
if [[ -z "$python" ]]; then
  for candidate in "${TSR_BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench/venv}/bin/python" \
                   python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import torch" 2>/dev/null; then
      python="$candidate"
      break
    fi
  done
fi
resolve="import sys; sys.path.insert(0, '$root/bench/harness'); from workloads import BY_KEY; \
missing = [w for w in '$workloads'.split(',') if w not in BY_KEY]; \
print('unknown workloads:', missing) if missing else print('workloads resolve:', '$workloads'); \
sys.exit(1 if missing else 0)"
if ! run bench python3 -c "$resolve"; then
  record bench FAIL "$(tail -1 "$out/bench.log")"
elif ! { run bench python3 "$root/bench/harness/main.py" --help &&
         grep -q -- "--torch-device" "$out/bench.log"; }; then
  record bench FAIL "bench/harness/main.py does not take --torch-device (see bench.log)"
elif [[ "$dry" == 1 ]]; then
  torch_note="no PyTorch found"
  [[ -n "$python" ]] && torch_note="PyTorch at $python"
  record bench ok "$workloads resolve in bench/harness; $torch_note, --torch-device cuda (not run: no GPU)"
elif [[ -z "$python" ]]; then
  record bench FAIL "no Python with torch found (set TSR_BENCH_PYTHON)"
else
  "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
    >>"$out/bench.log" 2>&1
  if run bench env TSR_DEVICE=cuda:0 python3 "$root/bench/harness/main.py" --root "$root" \
       --build "$build" --venv-python "$python" --quick --workloads "$workloads" \
       --peers torch_pypi --torch-device cuda:0 --docs no --out "$out/bench"; then
    record bench ok "results in $out/bench (PyTorch on cuda:0)"
  else
    record bench FAIL "exit $? (see bench.log)"
  fi
fi

elapsed=$(( SECONDS - start ))
record total "$([[ $failed == 0 ]] && echo ok || echo FAIL)" "${elapsed}s of ${total_budget}s$([[ $dry == 1 ]] && echo ', dry run')"
(( elapsed > total_budget )) && failed=1
exit $failed
