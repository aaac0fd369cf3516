#!/usr/bin/env bash
# Writes the default training corpus (the King James Bible, public domain, from Debian's bible-kjv)
# to the cache folder, outside git. Prints nothing when it is already there.
set -euo pipefail
cache="${LOCOSIM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/locosim}"
out="$cache/kjv.txt"
[ -s "$out" ] && exit 0
mkdir -p "$cache"
tmp="$out.tmp.$$"
# Verse references ("Ge1:1 ") are dropped: the model should learn English, not the index.
bible -f 'gen1:1-rev22:21' | sed -E 's/^[0-9]?[A-Za-z]+[0-9]+:[0-9]+ //' > "$tmp"
mv "$tmp" "$out"
echo "fetch-corpus: wrote $out ($(wc -c < "$out") bytes)"
