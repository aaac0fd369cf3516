#!/bin/sh
# python build_dir out_dir: scripts/reproduce.py on two cases for 4 steps at 2 seeds, then the
# document's shape: a section per case, the tuned column, a verdict per claim.
set -eu
python=$1 build=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
"$python" scripts/reproduce.py --build "$build" --only diloco-replicas demo-vs-adamw --steps 4 --seeds 2 \
  --output "$out/runs" --doc "$out/reproductions.md"
doc="$out/reproductions.md"
fail() { echo "smoke_test: $1"; cat "$doc"; exit 1; }
[ "$(grep -c '^### ' "$doc")" -eq 2 ] || fail "expected 2 sections"
grep -q '^| M = 8 | 15.08 ppl | [0-9.]* ± [0-9.]* | 2 |$' "$doc" || fail "no M = 8 row with an interval over 2 seeds"
grep -q '^| DeMo (tuned lr) | .* | 2 | lr=[0-9.e-]* |$' "$doc" || fail "no DeMo row naming its chosen lr"
[ "$(grep -cE '^\| .* \| \*\*(reproduced|not reproduced|inconclusive)\*\*' "$doc")" -eq 5 ] || fail "expected 5 verdicts (4 + 1 claims)"
cmp -s "$doc" docs/reproductions.md && fail "wrote the committed document"
echo "smoke_test: ok"
