#!/usr/bin/env python3
"""scale: timing-only DiLoCo on consumer links at growing numbers of workers.

Every worker is a home on 10 Mbps up / 100 Mbps down (15 ms), as in platforms/consumer-32.yaml,
with a well-connected relay; DiLoCo syncs every `--inner-steps` steps for `--rounds` rounds, once
through the relay (all_reduce: relay) and once around the ring (flows: aggregated). numerics: none,
so no LibTorch work is done: the cost is the simulator's own. One line per run:

    scale workers=256 collective=relay rounds=100 wall_s=1.92 cpu_s=1.85 peak_mib=210 simulated_s=5123.4 per_worker_round_us=75.0

per_worker_round_us divides the whole run (start-up, building the workers, writing the run folder) by
the worker-rounds. With `--marginal N`, each point also runs E more rounds, E = N / workers rounded up
(the same added work at every worker count, so start-up's noise weighs the same), and marginal_us is
what one more round costs a worker: (wall at R + E - wall at R) / (workers x E). A last line per
collective gives the ratio of the largest worker count's marginal cost to the smallest's:

    scale_ratio collective=relay workers=4096/256 marginal_ratio=1.90 printed_ratio=0.72 marginal_cpu_ratio=1.85

A shared machine slows single runs by a fifth and more, and a difference of two runs (marginal_us)
twice over: with `--repeat N` every run is made N times and the fastest counts (wall_s and cpu_s are
its; peak_mib is the largest of the N), so a ratio moves with the code rather than the neighbours. The
runs of a point's two lengths are made in turns (R, R + E, R, R + E, ...), so that a load that comes
or goes weighs on both; marginal_cpu_us and marginal_cpu_ratio are the same from the CPU seconds
(user + system), which a neighbour's load inflates less than the wall time.

With `--engine-floor build/bench/engine_floor`, the same points are run by that program instead: SimGrid
alone, shaped as the relay above (bench/engine_floor.cpp), with none of locosim's code. Its lines are
`floor ...` and `floor_ratio ...`, with the same fields: how much of a growth with the workers is the
engine's own.

Usage: python3 bench/scale.py [--locosim build/locosim] [--workers 256,1024,4096] [--rounds 100]
                              [--marginal 204800] [--repeat 3] [--engine-floor build/bench/engine_floor]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def scenario(workers, rounds, inner_steps, collective):
    network = "{all_reduce: relay}" if collective == "relay" else "{all_reduce: ring, flows: aggregated}"
    return f"""name: scale
numerics: none
seed: 1
platform:
  accelerators: {{rtx4090: {{peak: 165 TFLOPS, efficiency: 0.35}}}}
  hosts:
    - {{name: peer, accelerator: rtx4090, count: {workers},
       uplink: {{bandwidth: 10 Mbps, latency: 15 ms}}, downlink: {{bandwidth: 100 Mbps, latency: 15 ms}}}}
  relay:
    uplink: {{bandwidth: 100 Gbps, latency: 5 ms}}
    downlink: {{bandwidth: 100 Gbps, latency: 5 ms}}
network: {network}
data: {{path: kjv}}
model: {{preset: tiny, d_model: 32, n_layers: 1, n_heads: 2, seq_len: 32}}
train: {{steps: {rounds * inner_steps}, batch_size: 1, eval_every: {rounds * inner_steps}, eval_batches: 1}}
timing: {{params: 150.0e6, tokens_per_step: 65536}}
report: {{trace: none}}
policies:
  - {{name: diloco, inner_steps: {inner_steps}, wire: fp16}}
"""


def timed_run(locosim, args, what):
    """`locosim ARGS` under GNU time: (wall s, CPU s, peak KiB). Exits naming `what` if it fails."""
    return timed_output(locosim, args, what)[0]


def timed_output(program, args, what):
    """`program ARGS` under GNU time: ((wall s, CPU s, peak KiB), its standard output)."""
    start = time.monotonic()
    # GNU time's %M: the largest resident set of the run's processes (its simulation child
    # included); %U and %S: their CPU time, which other processes on a shared machine inflate
    # less than the wall time.
    result = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", program, *args], capture_output=True, text=True)
    wall = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"{what}: {pathlib.Path(program).name} failed:\n{result.stderr}")
    peak_kib, user_s, system_s = result.stderr.strip().splitlines()[-1].split()
    return (wall, float(user_s) + float(system_s), int(peak_kib)), result.stdout


def run(locosim, workers, rounds, inner_steps, collective):
    """One run: (wall s, CPU s, peak KiB, simulated s)."""
    with tempfile.TemporaryDirectory(prefix="locosim-scale-") as tmp:
        path = pathlib.Path(tmp) / "scale.yaml"
        path.write_text(scenario(workers, rounds, inner_steps, collective))
        measured = timed_run(locosim, ["run", str(path), "-o", f"{tmp}/runs", "--no-progress", "--force"],
                             f"scale: {workers} workers, {collective}")
        summary = json.loads(pathlib.Path(f"{tmp}/runs/scale/diloco/summary.json").read_text())
        return (*measured, summary["wall_clock_s"])


def run_floor(engine_floor, workers, rounds):
    """One run of bench/engine_floor.cpp: (wall s, CPU s, peak KiB, simulated s)."""
    measured, out = timed_output(engine_floor, [str(workers), str(rounds)], f"engine floor: {workers} workers")
    fields = dict(token.split("=", 1) for token in out.split() if "=" in token)
    return (*measured, float(fields["simulated_s"]))


def fastest(runs):
    """Of repeated runs (wall s, CPU s, peak KiB, ...): the fastest one's, with the largest peak of all."""
    best = list(min(runs))
    best[2] = max(r[2] for r in runs)
    return tuple(best)


def point(repeat, extra, run_one, workers, rounds):
    """fastest() of `repeat` runs `run_one(workers, rounds)` and, if `extra`, of `rounds + extra`: in
    turns, so that a neighbour's load weighs on both alike."""
    base, more = [], []
    for _ in range(repeat):
        base.append(run_one(workers, rounds))
        if extra:
            more.append(run_one(workers, rounds + extra))
    return fastest(base), fastest(more) if extra else None


def measure(args, kind, label, run_one):
    """Every worker count of `args` run by `run_one`: a `KIND LABEL...` line each and, with --marginal,
    a `KIND_ratio` line of the largest count's marginal cost over the smallest's."""
    costs = {}  # workers -> (per_worker_round_us, marginal_us, marginal_cpu_us)
    for workers in [int(w) for w in args.workers.split(",")]:
        extra = -(-args.marginal // workers) if args.marginal else 0
        (wall, cpu_s, peak_kib, simulated_s), more = point(args.repeat, extra, run_one, workers, args.rounds)
        per = wall / (workers * args.rounds) * 1e6
        line = (f"{kind} workers={workers}{label} rounds={args.rounds} "
                f"inner_steps={args.inner_steps} wall_s={wall:.2f} cpu_s={cpu_s:.2f} peak_mib={peak_kib / 1024:.0f} "
                f"simulated_s={simulated_s:.1f} per_worker_round_us={per:.1f}")
        marginal = marginal_cpu = None
        if more:
            wall1, cpu_s1 = more[0], more[1]
            marginal = (wall1 - wall) / (workers * extra) * 1e6
            marginal_cpu = (cpu_s1 - cpu_s) / (workers * extra) * 1e6
            line += (f" more_rounds={extra} more_wall_s={wall1:.2f} marginal_us={marginal:.1f}"
                     f" marginal_cpu_us={marginal_cpu:.1f}")
        if args.repeat > 1:
            line += f" repeats={args.repeat}"
        costs[workers] = (per, marginal, marginal_cpu)
        print(line, flush=True)
    if args.marginal and len(costs) > 1:
        low, high = min(costs), max(costs)
        print(f"{kind}_ratio{label} workers={high}/{low} "
              f"marginal_ratio={costs[high][1] / costs[low][1]:.2f} "
              f"printed_ratio={costs[high][0] / costs[low][0]:.2f} "
              f"marginal_cpu_ratio={costs[high][2] / costs[low][2]:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locosim", default=str(ROOT / "build" / "locosim"))
    parser.add_argument("--workers", default="256,1024,4096")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--inner-steps", type=int, default=5)
    parser.add_argument("--collectives", default="relay,ring")
    parser.add_argument("--marginal", type=int, default=0,
                        help="worker-rounds to add to each point in a second run, to print the marginal cost")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each point, the fastest counted")
    parser.add_argument("--engine-floor", default="",
                        help="run this build of bench/engine_floor.cpp (SimGrid alone) instead of locosim")
    args = parser.parse_args()
    if args.marginal < 0:
        sys.exit(f"scale: --marginal must be a number of worker-rounds >= 0, got {args.marginal}")
    if args.repeat < 1:
        sys.exit(f"scale: --repeat must be at least 1, got {args.repeat}")
    if args.engine_floor:
        if args.inner_steps != 5:
            sys.exit("scale: the engine floor's rounds are 5 steps each; leave --inner-steps at 5")
        measure(args, "floor", "", lambda workers, rounds: run_floor(args.engine_floor, workers, rounds))
        return
    for collective in args.collectives.split(","):
        measure(args, "scale", f" collective={collective}",
                lambda workers, rounds: run(args.locosim, workers, rounds, args.inner_steps, collective))


if __name__ == "__main__":
    main()
