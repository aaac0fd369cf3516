#!/usr/bin/env bash
# scripts/calibrate.py compute: measures a step of a scenario's model for real and prints the
# accelerator entry that makes the simulated step as long. Fails unless the entry is printed with a
# positive peak; and unless --device cuda is either measured (a GPU here) or refused with exit 2,
# naming runtime.device (a LibTorch without CUDA). Then the two halves apart, as on a GPU node whose
# build has no simulator: a build folder without `locosim` measures and prints the command that
# prices it; --step-seconds prices without running the model, the model that runs (a scenario's
# timing section, which prices a larger one, left out), in inverse proportion to the step.
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
work=$(mktemp -d)
trap 'rm -rf "$errors" "$work"' EXIT
out=$(calibrate --device cuda 2>"$errors")
code=$?
err=$(cat "$errors")
echo "$out"
echo "$err"
if [ $code -eq 0 ]; then  # a GPU here: the step was measured on it
  grep -Eq "$entry" <<<"$out" && grep -q "steps on cuda" <<<"$out" || { echo "no entry measured on cuda"; exit 1; }
else
  [ $code -eq 2 ] || { echo "--device cuda without a GPU: expected exit 2, got $code"; exit 1; }
  grep -q "runtime.device: cuda: this LibTorch" <<<"$err" || { echo "the refusal does not name runtime.device"; exit 1; }
  grep -q "could not be measured on cuda" <<<"$err" || { echo "calibrate.py does not say what it could not do"; exit 1; }
fi

# A build of the real backend alone: the measured step, and the command that prices it elsewhere.
mkdir "$work/real-only"
ln -s "$build/locosim-real" "$work/real-only/locosim-real"
out=$(calibrate --build "$work/real-only") || { echo "calibrate.py compute without a simulator failed: $out"; exit 1; }
echo "$out"
grep -Eq '^# measured: [0-9.e+-]+ s a step \(5 steps on cpu' <<<"$out" || { echo "no measured step"; exit 1; }
grep -Eq -- '--steps 5 --name probe --step-seconds [0-9.e+-]+$' <<<"$out" || { echo "no command to price it"; exit 1; }
grep -q "^accelerators:" <<<"$out" && { echo "an entry was printed without a simulator"; exit 1; }

# --step-seconds: priced, not run; the model that runs, whatever the timing section says.
peak_of() {
  python3 "$repo/scripts/calibrate.py" compute "$1" --name probe --build "$build" --step-seconds "$2" |
    sed -nE 's/^  probe: \{peak: ([^ ]+) TFLOPS.*/\1/p'
}
python3 - "$repo/scenarios/quickstart.yaml" "$work/untimed.yaml" <<'EOF'
import os, sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
s.pop("timing")
s["platform"] = os.path.join(os.path.dirname(sys.argv[1]), s["platform"])
yaml.safe_dump(s, open(sys.argv[2], "w"))
EOF
a=$(peak_of "$repo/scenarios/quickstart.yaml" 0.05)
b=$(peak_of "$repo/scenarios/quickstart.yaml" 0.1)
c=$(peak_of "$work/untimed.yaml" 0.05)
echo "quickstart at 0.05 s and 0.1 s a step: $a and $b TFLOPS; without its timing section: $c"
python3 -c "import sys; a, b, c = $a, $b, $c; sys.exit(0 if a > 0 and abs(a - 2 * b) <= 1e-3 * a and a == c else 1)" ||
  { echo "expected a positive peak, halved for twice the step, the same without the timing section"; exit 1; }
