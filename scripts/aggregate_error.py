#!/usr/bin/env python3
"""How far the aggregated collectives (network: {flows: aggregated}) are from the exact ones.

For each shipped platform (and consumer-32 doubled to 64 workers) it runs DDP (ring all-reduce),
DiLoCo (ring all-reduce) and DeMo (the platform's all-gather: relay where there is one, else mesh)
timing-only, once with exact flows and once aggregated, and prints a markdown table of simulated
wall-clock, the relative error, and the simulator's own run time for both.

    python3 scripts/aggregate_error.py [--locosim build/locosim] [--steps 8]

docs/aggregated-collectives.md holds its last output.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (label, platform file, replacement of `count: 32` or None)
CASES = [
    ("consumer-mix", "platforms/consumer-mix.yaml", None),
    ("mixed-gpus", "platforms/mixed-gpus.yaml", None),
    ("lan-8", "platforms/lan-8.yaml", None),
    ("opendiloco-3-countries", "platforms/opendiloco-3-countries.yaml", None),
    ("consumer-32", "platforms/consumer-32.yaml", None),
    ("consumer-64", "platforms/consumer-32.yaml", "count: 64"),
]

POLICIES = [("ddp", "ddp"), ("diloco", "{name: diloco, inner_steps: 4, wire: fp16}"), ("demo", "{name: demo}")]


def scenario(platform_path, steps, flows):
    policies = "\n".join(f"  - {p}" for _, p in POLICIES)
    return f"""name: aggregate-{flows}
numerics: none
seed: 1
platform: {platform_path}
network: {{all_reduce: ring, flows: {flows}}}
data: {{path: kjv}}
model: {{preset: tiny, d_model: 32, n_layers: 1, n_heads: 2, seq_len: 32}}
train: {{steps: {steps}, batch_size: 4, eval_every: {steps}, eval_batches: 1}}
timing: {{params: 25.0e6, tokens_per_step: 65536}}
policies:
{policies}
"""


def run(locosim, folder, text, name):
    path = folder / f"{name}.yaml"
    path.write_text(text)
    start = time.monotonic()
    result = subprocess.run([locosim, "run", str(path), "-o", str(folder / "runs"), "-j", "1", "--no-progress"],
                            capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"aggregate_error: {name} failed:\n{result.stderr}")
    out = {}
    for label, _ in POLICIES:
        summary = json.loads((folder / "runs" / f"aggregate-{name.split('-')[-1]}" / label / "summary.json").read_text())
        out[label] = summary
    return out, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locosim", default=str(ROOT / "build" / "locosim"))
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()

    print("| platform | K | policy | collective | exact wall-clock (s) | aggregated (s) | error | "
          "simulator time exact / aggregated (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, platform, count in CASES:
        with tempfile.TemporaryDirectory(prefix="locosim-aggregate-") as tmp:
            folder = pathlib.Path(tmp)
            text = (ROOT / platform).read_text()
            if count:
                text = text.replace("count: 32", count)
            (folder / "platform.yaml").write_text(text)
            results = {}
            for flows in ("exact", "aggregated"):
                results[flows] = run(args.locosim, folder, scenario("platform.yaml", args.steps, flows), f"s-{flows}")
            exact, exact_s = results["exact"]
            aggregated, aggregated_s = results["aggregated"]
            for policy, _ in POLICIES:
                e, a = exact[policy], aggregated[policy]
                if e["sent_bytes_per_worker"] != a["sent_bytes_per_worker"]:
                    sys.exit(f"aggregate_error: {label} {policy}: bytes differ "
                             f"({e['sent_bytes_per_worker']} vs {a['sent_bytes_per_worker']})")
                error = (a["wall_clock_s"] - e["wall_clock_s"]) / e["wall_clock_s"]
                collective = "all-gather" if policy == "demo" else "ring all-reduce"
                print(f"| {label} | {e['workers']} | {policy} | {collective} | {e['wall_clock_s']:.2f} | "
                      f"{a['wall_clock_s']:.2f} | {100 * error:+.2f}% | {exact_s:.1f} / {aggregated_s:.1f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
