#!/usr/bin/env bash
# tsr-train's ctest checks. Usage: checks.sh TSR_TRAIN CHECK
#   e2e        the MLP on 10,000 training images, 2 epochs, seed 1, reaches at
#              least 80% on all 10,000 test images
#   resume     2 epochs equal 1 epoch + resume + 1 epoch, bit for bit, on ref
#   bad-input  a missing data folder, truncated and corrupt IDX files, a
#              checkpoint of another model, a corrupt checkpoint, checkpoint
#              metadata out of range and bad options each fail with a clear
#              message and a non-zero status
# Exit 77 (ctest: skipped) when Fashion-MNIST is not installed.
set -uo pipefail
train="$1"
check="$2"
data=/usr/share/datasets/fashion-mnist
if [[ ! -d "$data" ]]; then
  echo "SKIPPED: $data is absent (Debian package dataset-fashion-mnist)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() {
  echo "FAIL: $*"
  exit 1
}

# Copies checkpoint $1 to $2 with metadata entry $3 set to $4 (the
# safetensors header is JSON after an 8-byte little-endian length).
meta_set() {
  python3 - "$@" <<'PY' || fail "cannot rewrite $1"
import json, struct, sys
src, dst, key, value = sys.argv[1:5]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header["__metadata__"][key] = value
text = json.dumps(header, separators=(",", ":")).encode()
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
}

# Copies checkpoint $1 to $2 with the first element of its first float32
# tensor set to NaN.
nan_set() {
  python3 - "$@" <<'PY' || fail "cannot rewrite $1"
import json, struct, sys
src, dst = sys.argv[1:3]
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
name = sorted(k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")[0]
start = 8 + n + header[name]["data_offsets"][0]
data[start:start + 4] = struct.pack("<I", 0x7FC00000)
open(dst, "wb").write(bytes(data))
PY
}

# Runs tsr-train expecting failure; the message must match $1.
expect_failure() {
  local pattern="$1"
  shift
  local out status
  out="$(timeout 120 "$train" "$@" 2>&1)"
  status=$?
  [[ $status -ne 124 ]] || fail "tsr-train $* hung (killed after 120 s); expected: $pattern"
  [[ $status -ne 0 ]] || fail "tsr-train $* succeeded; expected: $pattern"
  [[ $status -lt 128 ]] || fail "tsr-train $* crashed (status $status): $out"
  grep -q -- "$pattern" <<<"$out" || fail "tsr-train $*: message does not match '$pattern': $out"
  echo "ok: $* -> $(grep -- "$pattern" <<<"$out" | head -1)"
}

case "$check" in
  e2e)
    "$train" --model mlp --epochs 2 --train-limit 10000 --seed 1 --metrics e2e || fail "training failed"
    accuracy="$(tail -1 e2e.csv | cut -d, -f3)"
    awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.80) }' || fail "test accuracy $accuracy < 0.80"
    [[ -s e2e.png ]] || fail "no plot"
    echo "test accuracy $accuracy"
    ;;
  resume)
    common=(--device ref --model mlp --train-limit 1500 --batch 50 --seed 7)
    "$train" "${common[@]}" --epochs 2 --save a.st --metrics a >/dev/null || fail "run a"
    "$train" "${common[@]}" --epochs 1 --save b.st --metrics b >/dev/null || fail "run b1"
    "$train" "${common[@]}" --epochs 2 --resume b.st --save b.st --metrics b2 >/dev/null ||
      fail "run b2"
    cmp a.st b.st || fail "the resumed run's checkpoint differs from the uninterrupted run's"
    [[ "$(tail -1 a.csv | cut -d, -f2,3)" == "$(tail -1 b2.csv | cut -d, -f2,3)" ]] ||
      fail "losses or accuracies differ"
    echo "identical"
    ;;
  bad-input)
    expect_failure "data folder $work/none does not exist" --data "$work/none"
    mkdir -p trunc corrupt empty
    # Truncated: the real header, then a fraction of the pixels.
    head -c 1000 <(gzip -dc "$data/train-images-idx3-ubyte.gz") > trunc/train-images-idx3-ubyte
    cp "$data/train-labels-idx1-ubyte.gz" "$data/t10k-images-idx3-ubyte.gz" \
       "$data/t10k-labels-idx1-ubyte.gz" trunc/
    expect_failure "train-images-idx3-ubyte.*truncated" --data trunc --device ref
    # Corrupt gzip: garbage after a valid gzip header.
    { printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03'; head -c 4000 /dev/urandom; } \
      > corrupt/train-images-idx3-ubyte.gz
    cp "$data/train-labels-idx1-ubyte.gz" "$data/t10k-images-idx3-ubyte.gz" \
       "$data/t10k-labels-idx1-ubyte.gz" corrupt/
    expect_failure "train-images-idx3-ubyte.gz" --data corrupt --device ref
    expect_failure "train-images-idx3-ubyte" --data empty --device ref
    "$train" --device ref --model cnn --epochs 1 --train-limit 200 --save cnn.st \
      --metrics c >/dev/null || fail "cnn run"
    expect_failure "cnn.st" --device ref --model mlp --epochs 2 --resume cnn.st
    head -c 3000 cnn.st > broken.st
    expect_failure "broken.st" --device ref --model cnn --epochs 2 --resume broken.st
    expect_failure "no-such.st" --device ref --resume no-such.st
    # Metadata parsed and checked like the options they stand for.
    for bad in "tsr-train.base_lr nan" "tsr-train.base_lr -1" "tsr-train.base_lr inf" \
               "tsr-train.epoch abc" "tsr-train.epoch -2" "tsr-train.batch 99999999999" \
               "tsr-train.rng_offset abc" "tsr-train.rng_offset -1" "tsr-train.seed abc" \
               "tsr-train.seed -1"; do
      read -r key value <<<"$bad"
      meta_set cnn.st meta.st "$key" "$value"
      expect_failure "meta.st: $key must be .*'$value'" --device ref --model cnn --epochs 2 \
        --train-limit 200 --resume meta.st
    done
    # Weights holding NaN are refused on resume unless asked otherwise.
    nan_set cnn.st nan.st
    expect_failure "nan.st: parameter .* holds nan at element 0" --device ref --model cnn \
      --epochs 2 --train-limit 200 --resume nan.st
    # --allow-nonfinite passes the check: the run gets as far as the epoch
    # count (training on NaN weights is slow, so no epoch is run here).
    expect_failure "the checkpoint has 1 epochs already" --device ref --model cnn --epochs 1 \
      --train-limit 200 --resume nan.st --allow-nonfinite
    # FIFOs and links that lead nowhere, where a file is read or written:
    # each refused at once, before any training.
    mkfifo fifo.st fifo-metrics.csv
    mkdir -p fifo-data
    mkfifo fifo-data/train-images-idx3-ubyte
    cp "$data/train-labels-idx1-ubyte.gz" "$data/t10k-images-idx3-ubyte.gz" \
       "$data/t10k-labels-idx1-ubyte.gz" fifo-data/
    ln -s loop-b loop-a
    ln -s loop-a loop-b
    expect_failure "fifo.st.*FIFO" --device ref --model cnn --resume fifo.st
    expect_failure "--save fifo.st: a FIFO" --device ref --save fifo.st
    expect_failure "--metrics fifo-metrics.csv: a FIFO" --device ref --metrics fifo-metrics
    expect_failure "train-images-idx3-ubyte.*FIFO" --device ref --data fifo-data
    expect_failure "--save loop-a: a link that leads nowhere (a symlink loop)" --device ref \
      --save loop-a
    expect_failure "--save $work/no/such/folder/x.st: its folder" --device ref \
      --save "$work/no/such/folder/x.st"
    [[ -p fifo.st ]] || fail "the FIFO given to --save was replaced"
    expect_failure "--model must be mlp or cnn" --model rnn
    expect_failure "--epochs must be" --epochs 0
    expect_failure "--lr must be" --lr -1
    expect_failure "unknown or incomplete option" --bogus
    ;;
  *)
    echo "unknown check $check"
    exit 2
    ;;
esac
