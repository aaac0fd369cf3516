#!/usr/bin/env bash
# scripts/calibrate.py compute: measures a step of a scenario's model for real and prints the
# accelerator entry that makes the simulated step as long. Fails unless the entry is printed with a
# positive peak; and unless --device cuda is either measured (a GPU here) or refused with exit 2,
# naming runtime.device (a LibTorch without CUDA).
# Usage: tests/calibrate_compute_test.sh BUILD_DIR
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: calibrate_compute_test.sh BUILD_DIR}" && pwd)
calibrate() {
  python3 "$repo/scripts/calibrate.py" compute "$repo/scenarios/tests/wan-2.yaml" --name probe --steps 5 \
    --build "$build" "$@"
}
entry='^  probe: \{peak: [0-9.]+(e[-+]?[0-9]+)? TFLOPS, efficiency: 1\.0\}$'

out=$(calibrate) || { echo "calibrate.py compute failed: $out"; exit 1; }
echo "$out"
grep -Eq "$entry" <<<"$out" || { echo "no accelerator entry in the output"; exit 1; }
peak=$(sed -nE 's/^  probe: \{peak: ([^ ]+) TFLOPS.*/\1/p' <<<"$out")
python3 -c "import sys; sys.exit(0 if float('$peak') > 0 else 1)" || { echo "peak $peak is not positive"; exit 1; }
grep -q "steps on cpu" <<<"$out" || { echo "the entry does not say it was measured on the cpu"; exit 1; }

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
out=$(calibrate --device cuda 2>"$errors")
code=$?
err=$(cat "$errors")
echo "$out"
echo "$err"
if [ $code -eq 0 ]; then  # a GPU here: the step was measured on it
  grep -Eq "$entry" <<<"$out" && grep -q "steps on cuda" <<<"$out" || { echo "no entry measured on cuda"; exit 1; }
  exit 0
fi
[ $code -eq 2 ] || { echo "--device cuda without a GPU: expected exit 2, got $code"; exit 1; }
grep -q "runtime.device: cuda: this LibTorch" <<<"$err" || { echo "the refusal does not name runtime.device"; exit 1; }
grep -q "could not be measured on cuda" <<<"$err" || { echo "calibrate.py does not say what it could not do"; exit 1; }
