#!/usr/bin/env bash
# How long the quickstart takes to simulate, with policies run one at a time and two at a time.
# Prints the wall-clock seconds of each and their ratio. Usage: bench/quickstart_bench.sh [build dir]
set -euo pipefail
build="${1:-build}"
out=$(mktemp -d)
t() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $s" | bc; }
one=$(t "$build/locosim" run scenarios/quickstart.yaml -o "$out" -j 1)
two=$(t "$build/locosim" run scenarios/quickstart.yaml -o "$out" -j 2)
printf 'quickstart, -j 1: %.1f s\nquickstart, -j 2: %.1f s\nspeed-up: %.2fx\n' "$one" "$two" "$(echo "$one / $two" | bc -l)"
rm -rf "$out"
