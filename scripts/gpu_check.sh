#!/usr/bin/env bash
# The GPU path end to end, on a machine with a CUDA GPU and python3's torch (whose LibTorch it builds
# against): builds the real backend alone (-DLOCOSIM_SIMULATOR=OFF: no SimGrid needed), runs every
# policy of scenarios/tests/gpu-small.yaml on the GPU twice (2 ranks on GPU 0) and four of them once
# on the CPU, and measures the GPU's step on each model preset (scripts/calibrate.py compute; the pricing is
# done where the simulator is built, with the --step-seconds commands it prints). docs/validation.md
# records a run.
#
# Usage: scripts/gpu_check.sh OUT [PREFIX...]
#   OUT     folder for the logs, the run folders (runs.tar.gz) and summary.txt
#   PREFIX  more CMAKE_PREFIX_PATH entries (where yaml-cpp, fmt, CLI11, ... are, if not in /usr)
# Exit code: 0 when it built and every run finished; 1 otherwise (summary.txt says which).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:?usage: gpu_check.sh OUT [PREFIX...]}" && cd "$1" && pwd)
shift
build="$repo/build-gpu"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=0

{
  nvidia-smi
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'
  c++ --version | head -1
  cmake --version | head -1
  echo "cores: $(nproc)"
} > "$out/machine.txt" 2>&1
say "machine: $(grep -m1 '^torch ' "$out/machine.txt"); $(head -1 <(c++ --version)); $(nproc) cores"

torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
prefix=$(IFS=';'; echo "$torch_prefix;$*")
start=$(date +%s)
generator=("-G" "Unix Makefiles") keep_going=(-k)
command -v ninja > /dev/null && generator=("-G" "Ninja") keep_going=(-k 0)
# File by file rather than in unity batches: a GPU node's many cores build the files side by side.
if ! cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DLOCOSIM_SIMULATOR=OFF \
    -DCMAKE_UNITY_BUILD=OFF "-DCMAKE_PREFIX_PATH=$prefix" > "$out/configure.log" 2>&1; then
  say "configure: FAILED (configure.log)"
  exit 1
fi
if ! cmake --build "$build" --target locosim-real -j "$(nproc)" -- "${keep_going[@]}" > "$out/build.log" 2>&1; then
  say "build: FAILED after $(( $(date +%s) - start )) s (build.log: $(grep -c 'error:' "$out/build.log") errors)"
  exit 1
fi
say "build: locosim-real against LibTorch $(python3 -c 'import torch; print(torch.__version__)') in $(( $(date +%s) - start )) s"

# Every policy on the GPU twice, and those with GPU code of their own (DeMo's DCT and top-k,
# SparseLoCo's) and the two plainest on the CPU once: exit code, wall time, final loss, and whether
# the two GPU runs' metrics are the same bit for bit (time_s, the wall clock, left out).
scenario="$repo/scenarios/tests/gpu-small.yaml"
python3 - "$scenario" "$out/gpu-small-cpu.yaml" <<'EOF'
import os, sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
s["runtime"] = dict(s["runtime"], device="cpu")
yaml.safe_dump(s, open(sys.argv[2], "w"))
EOF
labels=$(python3 -c 'import sys, yaml; [print(p if isinstance(p, str) else p["name"]) for p in
  yaml.safe_load(open(sys.argv[1]))["policies"]]' "$scenario")
final_loss() {  # worker 0's last train_loss in a metrics.csv
  python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["worker"] == "0" and r["train_loss"]]
print(rows[-1]["train_loss"] if rows else "-")' "$1" 2>/dev/null || echo "-"
}
say ""
say "| policy | gpu run 1 | gpu run 2 | cpu | loss gpu | loss cpu | gpu runs identical |"
say "|---|---:|---:|---:|---:|---:|---|"
for label in $labels; do
  row="| $label"
  runs="gpu1 gpu2"
  case $label in ddp|diloco|demo|sparseloco) runs="$runs cpu" ;; esac
  for run in $runs; do
    file=$scenario
    [ "$run" = cpu ] && file="$out/gpu-small-cpu.yaml"
    t0=$(date +%s.%N)
    "$build/locosim-real" "$file" -p "$label" --spawn 2 -o "$out/runs/$run" > "$out/$run-$label.log" 2>&1
    rc=$?
    t=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))")
    if [ $rc -ne 0 ]; then row="$row | FAILED rc=$rc ($t s)"; failed=1; else row="$row | $t s"; fi
  done
  [ "$runs" = "gpu1 gpu2" ] && row="$row | -"
  g1="$out/runs/gpu1/gpu-small/$label/metrics.csv"
  g2="$out/runs/gpu2/gpu-small/$label/metrics.csv"
  c="$out/runs/cpu/gpu-small/$label/metrics.csv"
  same=no
  [ -s "$g1" ] && cmp -s <(cut -d, -f2- "$g1") <(cut -d, -f2- "$g2") && same=yes
  [ "$same" = yes ] || failed=1
  say "$row | $(final_loss "$g1") | $(final_loss "$c") | $same |"
done

# The GPU's step on each preset at its own sequence length (20 steps; batch 8, and 64 on the GPU).
say ""
for preset in tiny small base; do
  for batch in 8 64; do
    devices=cuda
    [ $batch = 8 ] && devices="cuda cpu"
    python3 - "$preset" "$batch" "$out/probe-$preset-$batch.yaml" <<'EOF'
import sys, yaml
preset, batch, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
yaml.safe_dump({"name": "probe", "seed": 1, "data": {"path": "kjv"}, "model": {"preset": preset},
                "train": {"steps": 20, "batch_size": batch}, "policies": ["ddp"],
                "platform": {"accelerators": {"x": {"peak": "1 TFLOPS", "efficiency": 1.0}},
                             "hosts": [{"name": "h", "accelerator": "x",
                                        "uplink": {"bandwidth": "1 Gbps", "latency": "1 ms"},
                                        "downlink": {"bandwidth": "1 Gbps", "latency": "1 ms"}}]}},
               open(path, "w"))
EOF
    for device in $devices; do
      if python3 "$repo/scripts/calibrate.py" compute "$out/probe-$preset-$batch.yaml" --device $device \
          --name "$device-$preset-$batch" --build "$build" > "$out/calibrate-$preset-$batch-$device.txt" 2>&1; then
        say "calibrate $preset batch $batch on $device: $(grep -m1 '^# measured' "$out/calibrate-$preset-$batch-$device.txt")"
      else
        say "calibrate $preset batch $batch on $device: FAILED"; failed=1
      fi
    done
  done
done

tar -C "$out" -czf "$out/runs.tar.gz" runs && rm -rf "$out/runs"
tar -C "$out" -czf "$out/logs.tar.gz" --exclude=runs.tar.gz --exclude=logs.tar.gz --exclude=summary.txt . 2>/dev/null
exit $failed
