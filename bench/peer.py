#!/usr/bin/env python3
"""peer: locosim's DiLoCo against a plain Python+PyTorch DiLoCo loop doing the same training.

The peer (`--peer`, default ../shared/peers/diloco_peer.py; Debian's python3-torch) trains K replicas
of a Llama-style model in turn, H inner AdamW steps then an outer Nesterov step on the fp16-rounded
mean pseudo-gradient, and times its training loop. locosim runs the same model shape (the loop's
SwiGLU width, int(8d/3), where locosim's own default rounds 8d/3 to a multiple of 16), batch,
sequence length, steps, H and thread budget as a scenario (4 workers on a LAN, -j 1), and is timed
as a whole process: start-up, data loading, the simulation, evaluation and the run folder included,
so the ratio is the least favourable to locosim. One line:

    peer workers=4 steps=100 threads=2 locosim_steps_per_s=... python_steps_per_s=... ratio=...
         native_steps_per_s=... native_ratio=... locosim_eval_loss=...

`ratio` is locosim as users run it: on the CPU kernels it pins so that every x86-64 machine with AVX2
gives the same numbers (models/cpu_kernels.hpp). The Python loop runs on the kernels its PyTorch picks
for this CPU, which on an AVX-512 CPU are faster ones. `native_ratio` is the same measurement with
locosim on the kernels the libraries pick too (LOCOSIM_NATIVE_KERNELS=1): like against like, from the
same run of the loop. bench/README.md's target is `ratio`.

With `--repeat N`, N such measurements in a row, a line each (`make bench` makes three).

Usage: python3 bench/peer.py [--locosim build/locosim] [--peer PATH] [--threads 2] [--repeat 1]
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def corpus_path():
    if os.environ.get("LOCOSIM_CACHE"):
        return pathlib.Path(os.environ["LOCOSIM_CACHE"]) / "kjv.txt"
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    return cache / "locosim" / "kjv.txt"


def scenario(a, intra_threads):
    return f"""name: peer
seed: 1
platform:
  accelerators: {{h100: {{peak: 989 TFLOPS, efficiency: 0.4}}}}
  hosts:
    - {{name: gpu, accelerator: h100, count: {a.workers},
       uplink: {{bandwidth: 10 Gbps, latency: 50 us}}, downlink: {{bandwidth: 10 Gbps, latency: 50 us}}}}
data: {{path: kjv}}
model: {{preset: tiny, d_model: {a.d}, n_layers: {a.layers}, n_heads: {a.heads}, seq_len: {a.seq}, ffn_hidden: {int(8 * a.d / 3)}}}
train:
  steps: {a.steps}
  batch_size: {a.batch}
  eval_every: {a.steps}
  eval_batches: 1
  optimizer: {{name: adamw, lr: 3.0e-4, weight_decay: 0.1}}
runtime: {{threads: {intra_threads}}}
report: {{trace: none}}
policies:
  - {{name: diloco, inner_steps: {a.H}, wire: fp16}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locosim", default=str(ROOT / "build" / "locosim"))
    parser.add_argument("--peer", default=str(ROOT.parent / "shared" / "peers" / "diloco_peer.py"))
    parser.add_argument("--python", default="/usr/bin/python3", help="the system Python, with Debian's python3-torch")
    for name, default in [("workers", 4), ("steps", 100), ("H", 25), ("d", 128), ("layers", 2), ("heads", 4),
                          ("seq", 64), ("batch", 16), ("threads", 2)]:
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--repeat", type=int, default=1, help="measurements in a row, one line each")
    a = parser.parse_args()
    if a.repeat < 1:
        sys.exit(f"peer: --repeat must be at least 1, got {a.repeat}")
    if not pathlib.Path(a.peer).exists():
        sys.exit(f"peer: {a.peer} does not exist (--peer names the Python DiLoCo loop)")
    if subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode != 0:
        sys.exit(f"peer: the Python peer needs PyTorch in {a.python}: apt-get install python3-torch")
    if not corpus_path().exists():
        sys.exit(f"peer: no corpus at {corpus_path()}: run scripts/fetch-corpus.sh (make demo does)")

    for _ in range(a.repeat):
        measure(a)


def locosim_steps_per_s(a, native):
    """locosim's worker-steps per second, the same thread budget spent two ways (LibTorch's intra-op
    threads, or the workers' steps side by side), on the pinned kernels or, if `native`, on the ones
    the libraries pick for this CPU; and the first run's summary."""
    env = {k: v for k, v in os.environ.items() if k != "LOCOSIM_NATIVE_KERNELS"}
    if native:
        env["LOCOSIM_NATIVE_KERNELS"] = "1"
    rates, summary = {}, None
    for how, intra, step_threads in (("intra_op", a.threads, 1), ("step_pool", 1, a.threads)):
        with tempfile.TemporaryDirectory(prefix="locosim-peer-") as tmp:
            path = pathlib.Path(tmp) / "peer.yaml"
            path.write_text(scenario(a, intra))
            start = time.monotonic()
            result = subprocess.run([a.locosim, "run", str(path), "-o", f"{tmp}/runs", "-j", "1", "--no-progress",
                                     "--step-threads", str(step_threads)], capture_output=True, text=True, env=env)
            seconds = time.monotonic() - start
            if result.returncode != 0:
                sys.exit(f"peer: locosim failed:\n{result.stderr}")
            summary = summary or json.loads(pathlib.Path(f"{tmp}/runs/peer/diloco/summary.json").read_text())
            rates[how] = a.workers * a.steps / seconds
    return rates, summary


def measure(a):
    """Both programs, locosim on both kinds of kernels; prints one line."""
    ours, summary = locosim_steps_per_s(a, native=False)
    native, _ = locosim_steps_per_s(a, native=True)

    args = [a.python, a.peer, "--corpus", str(corpus_path())]
    for name in ("workers", "steps", "H", "d", "layers", "heads", "seq", "batch", "threads"):
        args += [f"--{name}", str(getattr(a, name))]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"peer: the Python peer failed:\n{result.stderr}")
    python = float(re.search(r"steps_per_s=([0-9.]+)", result.stdout).group(1))
    best, best_native = max(ours.values()), max(native.values())
    print(f"peer workers={a.workers} steps={a.steps} threads={a.threads} "
          f"locosim_steps_per_s={best:.1f} (intra_op={ours['intra_op']:.1f} step_pool={ours['step_pool']:.1f}) "
          f"python_steps_per_s={python:.1f} ratio={best / python:.2f} "
          f"native_steps_per_s={best_native:.1f} (native_intra_op={native['intra_op']:.1f} "
          f"native_step_pool={native['step_pool']:.1f}) native_ratio={best_native / python:.2f} "
          f"locosim_eval_loss={summary['final_eval_loss']:.3f}", flush=True)


if __name__ == "__main__":
    main()
