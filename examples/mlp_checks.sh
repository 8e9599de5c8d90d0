#!/usr/bin/env bash
# ctest's check of examples/mlp.c. Usage: mlp_checks.sh TSR_EXAMPLE_MLP
# On the first 2,000 training images: two epochs in one run reach at least 60%
# on the 10,000 test images, and one epoch, then a second run that resumes
# from the checkpoint for the second epoch, prints the same epoch-2 line
# (loss to 4 decimals, accuracy to 2, lr). Exit 77 (ctest: skipped) when
# Fashion-MNIST is not installed.
set -uo pipefail
mlp="$1"
data=/usr/share/datasets/fashion-mnist
if [[ ! -d "$data" ]]; then
  echo "SKIPPED: $data is absent (Debian package dataset-fashion-mnist)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}

"$mlp" "$data" 2000 2 "$work/straight.safetensors" > "$work/straight.txt" ||
  fail "two epochs in one run: exit $?"
cat "$work/straight.txt"
"$mlp" "$data" 2000 1 "$work/resumed.safetensors" > "$work/first.txt" ||
  fail "the first epoch: exit $?"
"$mlp" "$data" 2000 2 "$work/resumed.safetensors" > "$work/resumed.txt" ||
  fail "the resumed second epoch: exit $?"
cat "$work/resumed.txt"

grep -Eq '^epoch 2: train loss [0-9.]+, test accuracy ([6-9][0-9]|100)\.' "$work/straight.txt" ||
  fail "below 60% test accuracy after two epochs"
grep -q '^resumed from .* after epoch 1$' "$work/resumed.txt" ||
  fail "the second run did not resume after epoch 1"
grep -q '^epoch 1:' "$work/resumed.txt" && fail "the resumed run trained epoch 1 again"
straight="$(grep '^epoch 2:' "$work/straight.txt")"
resumed="$(grep '^epoch 2:' "$work/resumed.txt")"
[[ -n "$resumed" && "$straight" == "$resumed" ]] ||
  fail "epoch 2 resumed ('$resumed') differs from epoch 2 in one run ('$straight')"
echo "mlp: epoch 2 resumed from the checkpoint equals epoch 2 of one run"
