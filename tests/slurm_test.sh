#!/usr/bin/env bash
# Against a real SLURM: starts a private single-node cluster (scripts/slurm-cluster.sh), then
#   1. submits a 6-point sweep (12 runs) as a job array with `locosim submit`; its merge job's
#      summary.csv must equal, byte for byte, that of the same sweep run locally; and again into an
#      output folder with a space, quotes and '%', whose logs sbatch must put there, named by job;
#   2. runs `srun -n 2 locosim-real` of a 2-worker scenario; its eval losses and final parameters
#      must equal those of `locosim-real --spawn 2` (the same numerics, whoever launched the ranks).
# Exits 77 (skipped, saying why) where no cluster can be started: not root, or SLURM not installed.
# Usage: tests/slurm_test.sh BUILD_DIR
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: slurm_test.sh BUILD_DIR}" && pwd)
cluster="$repo/scripts/slurm-cluster.sh"

"$cluster" check || exit 77

dir=$(mktemp -d /tmp/locosim-slurm.XXXXXX)
trap '"$cluster" stop "$dir/cluster" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
"$cluster" start "$dir/cluster" >/dev/null
# shellcheck disable=SC1091
source "$dir/cluster/env"
cd "$dir"

# Waits (at most $2 seconds) until job $1 has ended; fails unless it COMPLETED.
wait_job() {
  local state=""
  for _ in $(seq $(($2 * 5))); do
    state=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1)
    case "$state" in
      COMPLETED) return 0 ;;
      FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) break ;;
    esac
    sleep 0.2
  done
  echo "job $1 ended as '${state:-unknown}'" >&2
  cat runs/*/slurm/logs/* >&2 2>/dev/null || true
  return 1
}

echo "== a 6-point sweep as a job array"
sweep="$repo/scenarios/tests/sweep-small.yaml"
"$build/locosim" run "$sweep" -o local --no-progress >/dev/null
out=$("$build/locosim" submit "$sweep" -o runs)
echo "$out"
merge_job=$(sed -n 's/^submitted: job array [0-9]*, merge job \([0-9]*\).*/\1/p' <<<"$out")
[ -n "$merge_job" ] || { echo "no merge job id in the output of locosim submit" >&2; exit 1; }
wait_job "$merge_job" 300
cmp local/sweep-small/summary.csv runs/sweep-small/summary.csv
echo "summary.csv of the job array equals the local run's ($(wc -l <runs/sweep-small/summary.csv) lines)"
resubmit=$("$build/locosim" submit "$sweep" -o runs)
grep -q "all 12 runs are finished: nothing to submit" <<<"$resubmit" || { echo "$resubmit" >&2; exit 1; }

echo "== an output folder with a space, quotes and '%': sbatch reads the quoted #SBATCH --output"
odd='odd "runs" 100%'
out=$("$build/locosim" submit "$sweep" -o "$odd" -p ddp --max-tasks 2)
merge_job=$(sed -n 's/^submitted: job array \([0-9]*\), merge job \([0-9]*\).*/\2/p' <<<"$out")
array_job=$(sed -n 's/^submitted: job array \([0-9]*\), merge job.*/\1/p' <<<"$out")
[ -n "$merge_job" ] || { echo "$out" >&2; exit 1; }
wait_job "$merge_job" 300
for log in "${array_job}_0.out" "${array_job}_1.out" "merge-${merge_job}.out"; do
  [ -f "$odd/sweep-small/slurm/logs/$log" ] || { ls -la "$odd/sweep-small/slurm/logs" >&2; echo "no log $log" >&2; exit 1; }
done
echo "the logs are in '$odd/sweep-small/slurm/logs', named by job and task"

echo "== srun -n 2 locosim-real against --spawn 2"
cat >real.yaml <<'EOF'
name: real-slurm
seed: 5
platform:
  accelerators: {cpu: {peak: 1 TFLOPS, efficiency: 1.0}}
  hosts:
    - {name: w, accelerator: cpu, count: 2, uplink: {bandwidth: 100 Mbps, latency: 5 ms}, downlink: {bandwidth: 100 Mbps, latency: 5 ms}}
data: {path: kjv}
model: {preset: tiny, d_model: 32, n_layers: 1, n_heads: 2, seq_len: 16}
train: {steps: 12, batch_size: 4, eval_every: 6, eval_batches: 1}
policies:
  - {name: diloco, inner_steps: 4}
EOF
"$build/locosim-real" real.yaml --spawn 2 -o spawned >/dev/null
# The ranks of a job prove they belong to it with a secret they all read.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >job.secret
chmod 600 job.secret
LOCOSIM_JOB_SECRET_FILE=$PWD/job.secret timeout 300 srun -n 2 "$build/locosim-real" real.yaml -o srun
python3 - spawned/real-slurm/diloco srun/real-slurm/diloco <<'EOF'
import csv, json, sys
def eval_losses(folder):
    with open(folder + "/metrics.csv") as f:
        return [(r["worker"], r["step"], r["eval_loss"]) for r in csv.DictReader(f) if r["eval_loss"]]
a, b = (json.load(open(f + "/summary.json")) for f in sys.argv[1:3])
ea, eb = eval_losses(sys.argv[1]), eval_losses(sys.argv[2])
assert ea and ea == eb, f"eval losses differ:\n{ea}\n{eb}"
for key in ("final_eval_loss", "final_train_loss", "params_fingerprint", "steps", "workers"):
    assert a[key] == b[key], f"{key}: --spawn {a[key]} != srun {b[key]}"
print(f"srun -n 2 equals --spawn 2: eval loss {b['final_eval_loss']}, parameters {b['params_fingerprint']}, "
      f"{len(eb)} evaluations")
EOF
