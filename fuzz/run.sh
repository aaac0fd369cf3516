#!/usr/bin/env bash
# Builds a fuzzer with clang (libFuzzer + ASan + UBSan) in its own build folder, then runs it over its
# seeds. See fuzz/README.md.
#
#   fuzz/run.sh [--target locosim_fuzz|world_fuzz|relay_fuzz|store_fuzz] [--build DIR] [--seconds N] [--runs N] [-- libFuzzer flags ...]
#
# locosim_fuzz (the default): the scenario and platform loader, over the shipped scenarios and platforms.
# world_fuzz: the `world:` section and its trace files, over world-seeds/ and the shipped traces.
# Stops after N seconds or N inputs, whichever comes first (neither: until a finding or Ctrl-C).
# Exit codes: 0 nothing found, 1 a crash, leak or sanitizer report, 70 a hang (-timeout), 77 skipped
# because clang or its libFuzzer runtime is missing (ctest reads 77 as "skipped").
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
target=locosim_fuzz
build=
seconds=0
runs=-1
extra=()
while (($#)); do
  case "$1" in
    --target) target=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: fuzz/run.sh [--target locosim_fuzz|world_fuzz|relay_fuzz|store_fuzz] [--build DIR] [--seconds N] [--runs N] [-- libFuzzer flags]" >&2
       exit 2 ;;
  esac
done
case "$target" in
  # None links LibTorch: each builds in a minute or two, in a folder of its own.
  locosim_fuzz) build=${build:-$repo/build/fuzz/clang} ;;
  world_fuzz) build=${build:-$repo/build/fuzz/world} ;;
  # The real backend's peer parsers: seconds to build, thousands of inputs a second.
  relay_fuzz | store_fuzz) build=${build:-$repo/build/fuzz/wire} ;;
  *) echo "fuzz/run.sh: --target must be locosim_fuzz, world_fuzz, relay_fuzz or store_fuzz, got '$target'" >&2; exit 2 ;;
esac
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
if ! cmake --build "$build" --target "$target" -j "${JOBS:-$(nproc)}" >"$build/build.log" 2>&1; then
  cat "$build/build.log"
  echo "fuzz: the build failed"
  exit 1
fi
echo "fuzz: build took $((SECONDS - start)) s"

# libFuzzer adds new inputs to the first folder only; the others are seeds, read and never written.
# Memory (the loader): 36 MB at start (it was 700 MB while it linked LibTorch), 544 MB after 11255
# inputs (the sanitizers' and libFuzzer's records, about 1 KB an input, and ASan's quarantine: one
# input repeated keeps it flat), so a million inputs need about 2 GB. The limit is 4 GB for the process, 1 GB for any one allocation.
mkdir -p "$build/corpus" "$build/artifacts"
if [ "$target" = world_fuzz ]; then
  args=("$build/corpus" "$repo/fuzz/world-seeds" "$repo/scenarios/traces" "$repo/fuzz/regressions" -dict="$repo/fuzz/world.dict")
elif [ "$target" = relay_fuzz ] || [ "$target" = store_fuzz ]; then
  mkdir -p "$build/corpus-$target"
  args=("$build/corpus-$target")  # binary messages: libFuzzer starts from nothing
else
  args=("$build/corpus" "$repo/scenarios" "$repo/scenarios/tests" "$repo/platforms" "$repo/fuzz/regressions"
        -dict="$repo/fuzz/yaml.dict")
fi
args+=(-timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=1024 -max_len=8192
       -error_exitcode=1 -timeout_exitcode=70 -print_final_stats=1 -artifact_prefix="$build/artifacts/")
((seconds > 0)) && args+=(-max_total_time="$seconds")
((runs >= 0)) && args+=(-runs="$runs")
echo "fuzz: $build/$target ${args[*]} ${extra[*]}"
exec "$build/$target" "${args[@]}" "${extra[@]}"
