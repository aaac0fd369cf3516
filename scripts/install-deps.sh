#!/usr/bin/env bash
# Installs the Debian 12 packages locosim builds and runs with, and caches the default corpus.
#   scripts/install-deps.sh [--bench]
# Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake make pkg-config
  libsimgrid-dev libtorch-dev libeigen3-dev libyaml-cpp-dev doctest-dev
  libopenblas0-openmp libgloo-dev libcli11-dev libfmt-dev nlohmann-json3-dev libssl-dev
  bible-kjv
  clang libclang-rt-dev
  python3-pandas python3-matplotlib jupyter-nbconvert python3-ipykernel
  python3-pil chromium  # `locosim plot` checks its PNGs; the HTML page is tested in headless Chromium
  slurmctld slurmd slurm-client munge  # the private test cluster of scripts/slurm-cluster.sh
)

# `make bench` (--bench) also needs PyTorch for the Python peer it races (bench/peer.py).
if [ "${1:-}" = "--bench" ]; then packages+=(python3-torch); fi

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
