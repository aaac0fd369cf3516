#!/bin/sh
# Executes one notebook headless on a run folder and checks that it wrote its PNGs (a ctest entry of
# notebooks/CMakeLists.txt). usage: test_notebook.sh NOTEBOOK RUN FIGURES PNG...
set -eu
notebook=$1 run=$2 figures=$3
shift 3
jupyter=${JUPYTER:-jupyter}
if ! command -v "$jupyter" >/dev/null 2>&1; then
  echo "SKIP: jupyter is not installed; scripts/install-deps.sh installs jupyter-nbconvert, pandas and matplotlib"
  exit 77
fi
rm -rf "$figures"
mkdir -p "$figures"
LOCOSIM_RUN=$run LOCOSIM_FIGURES=$figures "$jupyter" nbconvert --to notebook --execute \
  --ExecutePreprocessor.timeout=300 --output-dir "$figures" "$notebook"
for png in "$@"; do
  if [ ! -s "$figures/$png" ]; then
    echo "FAIL: $(basename "$notebook") did not write $figures/$png"
    exit 1
  fi
  echo "ok: $figures/$png"
done
