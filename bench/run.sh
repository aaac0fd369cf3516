#!/usr/bin/env bash
# make bench: every benchmark in turn, one line per measurement, on the screen and in BUILD/bench.txt
# (the machine and commit first). `python3 bench/record.py write BUILD/bench.txt` then writes the
# figures and the targets they meet into bench/README.md.
# Usage: bench/run.sh BUILD PEER   (PEER: the Python DiLoCo loop; skipped with a line where it is not)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 peer=$2
log=$build/bench.txt
{
  python3 bench/record.py machine
  python3 bench/scale.py --locosim "$build/locosim" --marginal 204800 --repeat 3
  python3 bench/scale.py --engine-floor "$build/bench/engine_floor" --marginal 204800 --repeat 3
  python3 bench/swarm.py --locosim "$build/locosim"
  python3 bench/overhead.py --locosim "$build/locosim"
  if [ -f "$peer" ]; then
    python3 bench/peer.py --locosim "$build/locosim" --peer "$peer" --repeat 3
  else
    echo "peer skipped: no Python DiLoCo loop at $peer (make bench PEER=path/to/diloco_peer.py)"
  fi
} | tee "$log.part"
mv "$log.part" "$log"
echo "the figures are in $log; python3 bench/record.py write $log writes them into bench/README.md"
