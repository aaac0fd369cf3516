#!/usr/bin/env bash
# Builds the loader fuzzer with clang (libFuzzer + ASan + UBSan) in its own build folder, then runs it
# over the shipped scenarios and platforms. See fuzz/README.md.
#
#   fuzz/run.sh [--build DIR] [--seconds N] [--runs N] [-- libFuzzer flags ...]
#
# Stops after N seconds or N inputs, whichever comes first (neither: until a finding or Ctrl-C).
# Exit codes: 0 nothing found, 1 a crash, leak or sanitizer report, 70 a hang (-timeout), 77 skipped
# because clang or its libFuzzer runtime is missing (ctest reads 77 as "skipped").
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build/fuzz/clang
seconds=0
runs=-1
extra=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: fuzz/run.sh [--build DIR] [--seconds N] [--runs N] [-- libFuzzer flags]" >&2; exit 2 ;;
  esac
done
cxx=${FUZZ_CXX:-clang++}

skip() {
  echo "fuzz: skipped: $1 (scripts/install-deps.sh installs clang and libclang-rt-dev)"
  exit 77
}

mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  command -v "$cxx" >/dev/null || skip "$cxx not found"
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$build/probe.cpp"
  "$cxx" -fsanitize=fuzzer,address,undefined "$build/probe.cpp" -o "$build/probe" 2>"$build/probe.log" ||
    skip "$cxx cannot link -fsanitize=fuzzer,address,undefined (see $build/probe.log)"
  cmake -S "$repo/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
fi
start=$SECONDS
if ! cmake --build "$build" -j "${JOBS:-$(nproc)}" >"$build/build.log" 2>&1; then
  cat "$build/build.log"
  echo "fuzz: the build failed"
  exit 1
fi
echo "fuzz: build took $((SECONDS - start)) s"

# libFuzzer adds new inputs to the first folder only; the others are seeds, read and never written.
# Memory: about 700 MB at start (LibTorch's libraries, ASan's quarantine), then about 1 KB more per
# input (the sanitizers' and libFuzzer's records: one input repeated keeps it flat), so a million
# inputs need about 2 GB. The limit is 4 GB for the process, 1 GB for any one allocation.
mkdir -p "$build/corpus" "$build/artifacts"
args=("$build/corpus" "$repo/scenarios" "$repo/scenarios/tests" "$repo/platforms" "$repo/fuzz/regressions"
      -dict="$repo/fuzz/yaml.dict" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=1024 -max_len=8192
      -error_exitcode=1 -timeout_exitcode=70 -print_final_stats=1 -artifact_prefix="$build/artifacts/")
((seconds > 0)) && args+=(-max_total_time="$seconds")
((runs >= 0)) && args+=(-runs="$runs")
echo "fuzz: $build/locosim_fuzz ${args[*]} ${extra[*]}"
exec "$build/locosim_fuzz" "${args[@]}" "${extra[@]}"
