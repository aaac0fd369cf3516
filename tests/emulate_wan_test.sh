#!/usr/bin/env bash
# Emulated-WAN validation, small case: runs scenarios/tests/wan-ci.yaml's DDP and DiLoCo for real over
# links shaped like its platform (scripts/emulate_wan.py) and predicts them with the ideal and the
# calibrated tcp network models. Fails unless, for every policy, the tcp model's error is smaller
# than the ideal model's (the ideal one is 5-11% optimistic; docs/validation.md has the full table).
# Then runs scenarios/tests/wan-relay.yaml's DeMo with its all-gathers through a relay process in a
# namespace of its own (locosim-real --serve-relay): it must run and be predicted (the errors are
# printed; docs/validation.md has them over several runs).
# PART: tcp (the first), relay (the second) or both (the default). ctest runs them as two tests: the
# first alone (other tests' load would be measured as network time), the second beside others (no
# time of it is checked).
# Exits 77 (skipped, saying why) where network namespaces cannot be made.
# Usage: tests/emulate_wan_test.sh BUILD_DIR [tcp|relay|both]
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: emulate_wan_test.sh BUILD_DIR [tcp|relay|both]}" && pwd)
part=${2:-both}
case "$part" in
  tcp | relay | both) ;;
  *) echo "usage: emulate_wan_test.sh BUILD_DIR [tcp|relay|both]"; exit 2 ;;
esac
# Runs scripts/emulate_wan.py on scenarios/tests/$1 and prints its table, also kept in $out; exits 77
# (skipped) where network namespaces cannot be made, 1 if it failed.
emulate() {
  out=$(python3 "$repo/scripts/emulate_wan.py" "$repo/scenarios/tests/$1" --build "$build" \
        --calibration "$repo/platforms/calibration/tcp-emulated.yaml")
  local code=$?
  echo "$out"
  [ $code -eq 3 ] && exit 77
  [ $code -eq 0 ] || exit 1
}
if [ "$part" != relay ]; then
  emulate wan-ci.yaml
  rows=$(echo "$out" | grep -c '^| wan-ci |')
  [ "$rows" -eq 2 ] || { echo "expected 2 policies in the table, got $rows"; exit 1; }
  # | scenario | policy | measured | ideal s | ideal error | tcp s | tcp error |
  echo "$out" | grep '^| wan-ci |' | awk -F'|' '{
    ideal = $6; tcp = $8; gsub(/[ %+-]/, "", ideal); gsub(/[ %+-]/, "", tcp);
    if (tcp + 0 >= ideal + 0) { print "tcp error " $8 " is not below ideal error " $6 " for" $3; bad = 1 }
  } END { exit bad }'
  [ $? -eq 0 ] || exit 1
fi
if [ "$part" != tcp ]; then
  emulate wan-relay.yaml
  rows=$(echo "$out" | grep -c '^| wan-relay | demo |')
  [ "$rows" -eq 1 ] || { echo "expected the relay's DeMo row in the table, got $rows"; exit 1; }
fi
