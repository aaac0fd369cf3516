#!/usr/bin/env python3
"""swarm: scenarios/swarm-10k.yaml (10 000 timing-only DiLoCo workers through a relay) at many rounds.

The scenario as shipped runs 2 rounds; this runs it for `--rounds` rounds (its policy syncs every
`--inner-steps` = 5 steps, so train.steps is rounds x 5, with one evaluation at the end) and prints
one line, the fastest of `--repeat` runs (peak_mib is the largest):

    swarm scenario=swarm-10k workers=10000 rounds=100 wall_s=45.41 cpu_s=46.46 peak_mib=1418 simulated_s=48566.7 repeats=1

wall_s is the whole command: start-up, building the workers, the rounds and the run folder.

Usage: python3 bench/swarm.py [--locosim build/locosim] [--rounds 100] [--inner-steps 5] [--repeat 1]
"""
import argparse
import json
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from scale import fastest, timed_run  # noqa: E402  (the same timing as the scale benchmark)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "swarm-10k.yaml"


def run(locosim, rounds, inner_steps):
    """One run: (wall s, CPU s, peak KiB, simulated s, workers)."""
    steps = rounds * inner_steps
    with tempfile.TemporaryDirectory(prefix="locosim-swarm-") as tmp:
        measured = timed_run(locosim, ["run", str(SCENARIO), "-o", f"{tmp}/runs", "--no-progress", "--force",
                                       "--set", f"train.steps={steps}", "--set", f"train.eval_every={steps}"], "swarm")
        summary = json.loads(pathlib.Path(f"{tmp}/runs/swarm-10k/diloco/summary.json").read_text())
        if summary["syncs_committed"] != rounds:  # --inner-steps is not the scenario's
            sys.exit(f"swarm: {steps} steps made {summary['syncs_committed']} rounds, not {rounds}: "
                     f"--inner-steps must be the scenario's")
        return (*measured, summary["wall_clock_s"], summary["workers"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locosim", default=str(ROOT / "build" / "locosim"))
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--inner-steps", type=int, default=5, help="the scenario's DiLoCo inner_steps")
    parser.add_argument("--repeat", type=int, default=1, help="runs, the fastest counted")
    args = parser.parse_args()
    if args.rounds < 1 or args.inner_steps < 1 or args.repeat < 1:
        sys.exit("swarm: --rounds, --inner-steps and --repeat must be at least 1")
    wall, cpu_s, peak_kib, simulated_s, workers = fastest(
        [run(args.locosim, args.rounds, args.inner_steps) for _ in range(args.repeat)])
    print(f"swarm scenario=swarm-10k workers={workers} rounds={args.rounds} "
          f"wall_s={wall:.2f} cpu_s={cpu_s:.2f} peak_mib={peak_kib / 1024:.0f} simulated_s={simulated_s:.1f} "
          f"repeats={args.repeat}", flush=True)


if __name__ == "__main__":
    main()
