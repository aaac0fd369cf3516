#!/usr/bin/env bash
# Installs the Debian 12 packages locosim builds and runs with, and caches the default corpus.
#   scripts/install-deps.sh [--demo | --plot | --bench]
#     --demo   only what `make demo` needs: the compiler, the libraries and the corpus
#     --plot   that and the system Python's plotting (`locosim plot`, `report --html`, the notebooks)
#     (none)   everything `make test` needs: also clang for the fuzzers, Jupyter, Chromium and SLURM
#     --bench  everything, and PyTorch for the Python peer that `make bench` races (bench/peer.py)
# Idempotent: does nothing when everything is already there.
set -euo pipefail

demo=(
  build-essential cmake make pkg-config python3
  libsimgrid-dev libtorch-dev libeigen3-dev libyaml-cpp-dev doctest-dev
  libopenblas0-openmp libjemalloc-dev libgloo-dev libcli11-dev libfmt-dev nlohmann-json3-dev libssl-dev
  bible-kjv
)
plot=(python3-pandas python3-matplotlib python3-pil)
test=(
  clang libclang-rt-dev                  # the fuzzers (fuzz/run.sh)
  jupyter-nbconvert python3-ipykernel    # the notebooks' tests
  chromium                               # the HTML page is tested in headless Chromium
  slurmctld slurmd slurm-client munge    # the private test cluster of scripts/slurm-cluster.sh
)

case "${1:-}" in
  --demo) packages=("${demo[@]}") ;;
  --plot) packages=("${demo[@]}" "${plot[@]}") ;;
  "") packages=("${demo[@]}" "${plot[@]}" "${test[@]}") ;;
  --bench) packages=("${demo[@]}" "${plot[@]}" "${test[@]}" python3-torch) ;;
  *) echo "usage: scripts/install-deps.sh [--demo | --plot | --bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's LibTorch falls back to the reference BLAS (about 20x slower on small steps) unless
# OpenBLAS is the selected alternative.
blas_link=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/ {print $2}')
case "$blas_link" in
  *openblas*) ;;
  *) echo "install-deps: warning: libblas.so.3 points to '$blas_link', not OpenBLAS; training will be slow" ;;
esac

"$(dirname "$0")/fetch-corpus.sh"
