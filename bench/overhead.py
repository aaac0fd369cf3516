#!/usr/bin/env python3
"""overhead: a full run's wall time against the LibTorch work in it, and the step pool's speed-up.

Runs bench/peer.py's scenario (4 workers, DiLoCo, a 2-layer d=128 model, 100 steps) with
`locosim run --cost`, which times, in the run's own process, the workers' steps (forward, backward,
a policy's own work), the optimizer steps and the evaluations. Two lines:

    overhead workers=4 steps=100 wall_s=14.02 torch_s=13.88 ratio=1.010
    pool workers=4 one_thread_s=14.02 threads=2 pooled_s=7.21 speedup=1.94

The first is with one thread (runtime.threads 1, --step-threads 1): wall / (steps + optimizer +
evaluation). The second runs the workers' steps on 1 and 2 threads (--step-threads), results
byte-identical (tests/pool_test.cpp).

Usage: python3 bench/overhead.py [--locosim build/locosim] [--threads 2]
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peer  # noqa: E402  (the same scenario as the peer benchmark)

ROOT = pathlib.Path(__file__).resolve().parent.parent
COST = re.compile(r"cost \S+: ([0-9.]+) s in all; LibTorch: steps ([0-9.]+) s .*optimizer ([0-9.]+) s, "
                  r"evaluation ([0-9.]+) s")


def run(locosim, config, step_threads):
    with tempfile.TemporaryDirectory(prefix="locosim-overhead-") as tmp:
        path = pathlib.Path(tmp) / "peer.yaml"
        path.write_text(peer.scenario(config, 1))
        result = subprocess.run([locosim, "run", str(path), "-o", f"{tmp}/runs", "-j", "1", "--no-progress",
                                 "--step-threads", str(step_threads), "--cost"], capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"overhead: locosim failed:\n{result.stderr}")
        m = COST.search(result.stdout)
        if not m:
            sys.exit(f"overhead: no cost line in locosim's output:\n{result.stdout}")
        return [float(x) for x in m.groups()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locosim", default=str(ROOT / "build" / "locosim"))
    parser.add_argument("--threads", type=int, default=2, help="the step pool's threads for the speed-up")
    a = parser.parse_args()
    config = argparse.Namespace(workers=4, steps=100, H=25, d=128, layers=2, heads=4, seq=64, batch=16)
    wall, steps, optimizer, evaluation = run(a.locosim, config, 1)
    torch_s = steps + optimizer + evaluation
    print(f"overhead workers={config.workers} steps={config.steps} wall_s={wall:.2f} torch_s={torch_s:.2f} "
          f"ratio={wall / torch_s:.3f}", flush=True)
    pooled = run(a.locosim, config, a.threads)[0]
    print(f"pool workers={config.workers} one_thread_s={wall:.2f} threads={a.threads} pooled_s={pooled:.2f} "
          f"speedup={wall / pooled:.2f}", flush=True)


if __name__ == "__main__":
    main()
