#!/usr/bin/env python3
"""Runs the small-scale reproductions of published results (reproductions/*.yaml) and writes
docs/reproductions.md: for each published claim, the paper's numbers, locosim's final eval loss per
configuration (mean ± 95% interval over the training seeds), the paired difference the claim is about,
and a verdict.

  python3 scripts/reproduce.py [--build build] [--only ID ...] [--list] [--steps N] [--seeds N]
                               [--output runs] [--doc docs/reproductions.md]

A claim compares two configurations trained at the same seeds (the same initial weights and batches),
so each verdict reads the per-seed difference d_s = loss(b, s) - loss(a, s), its mean and the
half-width h of its 95% Student-t interval:
  lower a b     "a ends lower than b":  reproduced if mean - h > 0, not reproduced if mean + h < 0
  similar a b   "a and b end alike":    reproduced if the interval lies inside [-margin, margin], not
                                        reproduced if it lies wholly outside it
otherwise inconclusive: the seeds cannot tell. Runs go to --output as a user's would and are reused
when already there (results are deterministic). --steps and --seeds shorten the scenarios (ctest runs
one case for a few steps); a shortened run writes its document where --doc says, never over the
committed one unless asked.
"""
import argparse
import csv
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# t(0.975, df), df = 1..30: the table report/confidence.cpp prints intervals with.
T975 = [12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041, 2.2621572,
        2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053, 2.1098156, 2.1009220,
        2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986, 2.0595386, 2.0555294, 2.0518305,
        2.0484071, 2.0452296, 2.0422725]

# Two final eval losses closer than this (nats) are "alike": about 2% in perplexity, five times the
# largest gap the papers below call negligible (Table 6: +0.39% perplexity at 50% pruned).
MARGIN = 0.02


@dataclass
class Claim:
    kind: str            # "lower" or "similar"
    a: str               # configuration names (Case.configs keys)
    b: str
    published: str       # what the paper reports for this pair


@dataclass
class Case:
    id: str
    paper: str
    result: str
    configs: dict        # name -> (point, label or tuned entry); point "" without a sweep
    published: dict      # name -> the paper's number for it, where it gives one
    claims: list
    scale: str           # how the small-scale setting differs from the paper's
    notes: str = ""


DILOCO = "DiLoCo ([2311.08105](https://arxiv.org/abs/2311.08105))"
CASES = [
    Case("diloco-replicas", DILOCO, "Table 3: replicas at a fixed per-replica batch (i.i.d.)",
         {**{f"M = {m}": (f"count={m}", "diloco") for m in (1, 2, 4, 8)},
          **{f"M = {m}, η 0.3": (f"count={m}", "diloco-lr0.3") for m in (1, 2, 4, 8)}},
         {"M = 1": "16.23 ppl", "M = 4": "15.23 ppl", "M = 8": "15.08 ppl"},
         [Claim("lower", "M = 4", "M = 1", "15.23 < 16.23 ppl (−0.063 nats)"),
          Claim("lower", "M = 8", "M = 4", "15.08 < 15.23 ppl (−0.010 nats)"),
          Claim("lower", "M = 4, η 0.3", "M = 1, η 0.3", "as above"),
          Claim("lower", "M = 8, η 0.3", "M = 4, η 0.3", "as above")],
         "150M model, C4, H = 500, 88k steps; here the tiny model, the King James Bible, H = 20, 400 steps, "
         "outer Nesterov at the paper's η 0.7 and at η 0.3, the best of the paper's grid in this setting "
         "(Figure 6 below)",
         "The paper starts DiLoCo from a model pretrained for 24k steps and averages 128 times; here training "
         "starts from random weights and averages 20 times, and at η 0.7 the seeds spread far more than at "
         "η 0.3 (compare the two halves' intervals)."),
    Case("diloco-inner-steps", DILOCO, "Figure 4: inner steps H between syncs",
         {**{f"H = {h}": ("", f"h{h}") for h in (10, 20, 50, 100)},
          **{f"H = {h}, η 0.3": ("", f"h{h}-lr0.3") for h in (10, 20, 50, 100)}},
         {},  # the paper gives one number: the claims' column
         [Claim("lower", "H = 10", "H = 100", "fewer syncs cost a little: H = 1000 is +2.9% ppl over H = 50 (+0.029 nats)"),
          Claim("lower", "H = 50", "H = 100", "as above"),
          Claim("lower", "H = 10, η 0.3", "H = 100, η 0.3", "as above"),
          Claim("lower", "H = 50, η 0.3", "H = 100, η 0.3", "as above")],
         "88k steps (88 to 1760 rounds) at the paper's η 0.7; here 400 steps, 40 to 4 rounds, at η 0.7 and "
         "at η 0.3",
         "At η 0.7 the frequent syncs (H = 10 and 20: 40 and 20 outer steps of a large momentum) are unstable at "
         "some seeds, which hides any effect of H; at η 0.3 the fewest syncs (H = 100: 4 rounds in all) end "
         "clearly highest, the paper's direction and more steeply, though H = 10 ends above H = 20."),
    Case("diloco-outer-optimizer", DILOCO, "Figure 6: the outer optimizer, each at its tuned outer lr",
         {"Nesterov": ("", "nesterov"), "SGD (FedAvg at lr 1)": ("", "sgd"), "Adam (ε 0.1)": ("", "adam")},
         {"Nesterov": "best (η 0.7, μ 0.9)", "SGD (FedAvg at lr 1)": "worse", "Adam (ε 0.1)": "worse"},
         [Claim("lower", "Nesterov", "SGD (FedAvg at lr 1)", "Nesterov below SGD (figure; values not given in the text)"),
          Claim("lower", "Nesterov", "Adam (ε 0.1)", "Nesterov below Adam (figure)")],
         "outer lr grid {0.1, 0.3, 0.5, 0.7, 1.0} per optimizer at 150M; here a grid per optimizer, chosen "
         "on the validation split",
         "SGD is run without momentum (at lr 1 it is FedAvg) over {0.7, 1.0, 1.4}; Adam over {0.03, 0.1, 0.3}, "
         "below the paper's grid because with ε 0.1 and pseudo-gradients of about 0.01 its step is about "
         "8·lr·Δ. With 20 rounds from random weights outer momentum has few rounds to pay off."),
    Case("diloco-pruning", DILOCO, "Table 6: pruning the outer gradient before it is sent",
         {"0%": ("", "prune-0"), "25%": ("", "prune-25"), "50%": ("", "prune-50"), "75%": ("", "prune-75"),
          "50%, TIES merge": ("", "prune-50-ties")},
         {"0%": "15.02 ppl", "25%": "15.01 ppl", "50%": "15.08 ppl", "75%": "15.27 ppl",
          "50%, TIES merge": "\"slightly worse\" (appendix)"},
         [Claim("similar", "0%", "25%", "15.01 vs 15.02 ppl (−0.001 nats)"),
          Claim("similar", "0%", "50%", "15.08 vs 15.02 ppl (+0.004 nats)"),
          Claim("lower", "0%", "75%", "15.27 vs 15.02 ppl (+0.017 nats)"),
          Claim("lower", "50%", "50%, TIES merge", "the plain mean beats TIES's disjoint merge (no numbers)")],
         "per-tensor trim (the paper: \"per-neuron\"); 150M model, 8 replicas non-i.i.d.; here 4 i.i.d. replicas",
         "A pruned payload is all-gathered (each worker needs the others' trimmed values), so at 4 workers 25% "
         "and 50% pruning send more bytes than the unpruned ring all-reduce (summary.csv's bytes columns)."),
    Case("demo-vs-adamw", "DeMo ([2411.19870](https://arxiv.org/abs/2411.19870))",
         "DeMo against AdamW data-parallel at equal steps",
         {"AdamW DDP": ("", "ddp"), "DeMo (tuned lr)": ("", "demo")},
         {"AdamW DDP": "baseline", "DeMo (tuned lr)": "comparable loss, 85× fewer bytes"},
         [Claim("similar", "AdamW DDP", "DeMo (tuned lr)", "comparable: \"match or surpass\" AdamW (300M, 1B OLMo)")],
         "300M/1B OLMo, 100B tokens, both at lr 4e-4; here DDP at the tiny model's lr 3e-3, DeMo's lr tuned",
         "DDP's AdamW is not tuned here (its lr is train.optimizer.lr, which every policy shares), DeMo's is: if "
         "anything the comparison favours DeMo. At the paper's lr 4e-4 DeMo trains far more slowly here "
         "(runs/repro-demo-vs-adamw/seeds.csv)."),
    Case("streaming-4bit", "Streaming DiLoCo ([2501.18512](https://arxiv.org/abs/2501.18512))",
         "Figure 11: 4-bit (E3M0) outer gradients against fp32",
         {"fp32": ("", "fp32"), "E3M0 (4 bits)": ("", "e3m0")},
         {"fp32": "baseline", "E3M0 (4 bits)": "\"does not affect the performance\""},
         [Claim("similar", "fp32", "E3M0 (4 bits)", "no difference (figure; Table 1: 2.66 vs data-parallel 2.67)")],
         "500M model, C4, 2 replicas; here 4 replicas, 2 fragments, H = 20"),
]


def interval(values):
    """(mean, half-width of the 95% Student-t interval, n); the half-width is nan below 2 values."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    t = T975[n - 2] if n - 1 <= len(T975) else 1.959963984540054
    return mean, t * sd / math.sqrt(n), n


def verdict(kind, mean, half):
    if math.isnan(half):
        return "inconclusive", "one seed: no interval"
    low, high = mean - half, mean + half
    if kind == "lower":
        if low > 0:
            return "reproduced", ""
        if high < 0:
            return "not reproduced", f"the ordering is reversed at this scale (d = {mean:+.3f} ± {half:.3f})"
        return "inconclusive", f"the interval of d ({mean:+.3f} ± {half:.3f}) includes 0"
    if -MARGIN <= low and high <= MARGIN:
        return "reproduced", ""
    if low > MARGIN or high < -MARGIN:
        return "not reproduced", f"they differ by {mean:+.3f} ± {half:.3f} nats, beyond ±{MARGIN}"
    return "inconclusive", f"d = {mean:+.3f} ± {half:.3f} is neither inside nor outside ±{MARGIN}"


def shortened(scenario, steps, seeds):
    """A copy of the scenario file with fewer steps and seeds (for the ctest smoke run)."""
    text = scenario.read_text()
    if steps:
        text = re.sub(r"(?m)^(  steps:) \d+", rf"\1 {steps}", text)
        text = re.sub(r"(?m)^(  eval_every:) \d+", rf"\1 {steps}", text)
        text = re.sub(r"warmup_steps: \d+", f"warmup_steps: {max(1, steps // 10)}", text)
        text = re.sub(r"inner_steps: \d+", f"inner_steps: {max(1, steps // 4)}", text)
    if seeds:
        text = re.sub(r"(?m)^seeds: \d+", f"seeds: {seeds}", text)
    copy = Path(tempfile.mkdtemp(prefix="locosim-reproduce-")) / scenario.name
    copy.write_text(text)
    return copy


def run_case(case, options):
    scenario = REPO / "reproductions" / f"{case.id}.yaml"
    if options.steps or options.seeds:
        scenario = shortened(scenario, options.steps, options.seeds)
    done = subprocess.run([str(Path(options.build) / "locosim"), "run", str(scenario), "-o", options.output,
                           "--no-progress"], cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env={**os.environ, "CI": "true"})
    if done.returncode != 0:
        sys.exit(f"reproduce: {case.id}: `locosim run {scenario}` failed (exit {done.returncode}):\n{done.stdout}")
    name = re.search(r"(?m)^name: (\S+)", scenario.read_text()).group(1)
    return Path(options.output) if Path(options.output).is_absolute() else REPO / options.output, name


def read_losses(root):
    """{(point, label): {seed: final eval loss}} from summary.csv; point without its seed part."""
    out = {}
    with open(root / "summary.csv", newline="") as f:
        for row in csv.DictReader(f):
            point = "+".join(p for p in row["point"].split("+") if not p.startswith("seed="))
            out.setdefault((point, row["label"]), {})[int(row["seed"])] = float(row["final_eval_loss"])
    return out


def read_choices(root):
    """{entry: (chosen label, setting)} from tuned.csv, if the scenario tunes."""
    path = root / "tuned.csv"
    if not path.exists():
        return {}
    with open(path, newline="") as f:
        return {row["entry"]: (row["chosen"], row["setting"]) for row in csv.DictReader(f)}


def section(case, root):
    losses, choices = read_losses(root), read_choices(root)
    per_config, settings = {}, {}
    for name, (point, label) in case.configs.items():
        chosen, setting = choices.get(label, (label, ""))
        if (point, chosen) not in losses:
            sys.exit(f"reproduce: {case.id}: no finished runs of '{chosen}' at point '{point or '-'}' in {root}")
        per_config[name], settings[name] = losses[(point, chosen)], setting
    lines = [f"### {case.paper}, {case.result}", "",
             f"Scenario: [`reproductions/{case.id}.yaml`](../reproductions/{case.id}.yaml). Scale: {case.scale}.", "",
             "| configuration | published | final eval loss (mean ± 95% CI) | seeds |" +
             (" chosen on validation |" if choices else ""),
             "|---|---|---|---|" + ("---|" if choices else "")]
    for name, by_seed in per_config.items():
        mean, half, n = interval(list(by_seed.values()))
        cell = f"{mean:.3f}" if math.isnan(half) else f"{mean:.3f} ± {half:.3f}"
        row = f"| {name} | {case.published.get(name, '')} | {cell} | {n} |"
        lines.append(row + (f" {settings[name] or 'defaults'} |" if choices else ""))
    lines += ["", "| claim | published | d = loss(b) − loss(a), paired (mean ± 95% CI) | verdict |", "|---|---|---|---|"]
    verdicts = []
    for claim in case.claims:
        a, b = per_config[claim.a], per_config[claim.b]
        seeds = sorted(set(a) & set(b))
        mean, half, _ = interval([b[s] - a[s] for s in seeds])
        word, why = verdict(claim.kind, mean, half)
        verdicts.append(word)
        said = f"{claim.a} below {claim.b}" if claim.kind == "lower" else f"{claim.a} ≈ {claim.b} (±{MARGIN})"
        cell = f"{mean:+.3f}" if math.isnan(half) else f"{mean:+.3f} ± {half:.3f}"
        lines.append(f"| {said} | {claim.published} | {cell} | **{word}**{': ' + why if why else ''} |")
    if case.notes:
        lines += ["", case.notes]
    return "\n".join(lines) + "\n", verdicts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="the build folder (default: build)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these cases")
    parser.add_argument("--list", action="store_true", help="list the cases")
    parser.add_argument("--steps", type=int, default=0, help="train this many steps instead (a smoke run)")
    parser.add_argument("--seeds", type=int, default=0, help="this many seeds instead")
    parser.add_argument("--output", default="runs", help="folder for the run folders (default: runs)")
    parser.add_argument("--doc", default="docs/reproductions.md", help="the document written")
    options = parser.parse_args()
    if options.list:
        for case in CASES:
            print(f"{case.id}: {case.paper}, {case.result}")
        return
    wanted = [c for c in CASES if options.only is None or c.id in options.only]
    unknown = set(options.only or []) - {c.id for c in CASES}
    if unknown:
        sys.exit(f"reproduce: no case {', '.join(sorted(unknown))} (cases: {', '.join(c.id for c in CASES)})")
    parts, tally = [], {}
    for case in wanted:
        print(f"reproduce: {case.id} ...", flush=True)
        out, name = run_case(case, options)
        text, verdicts = section(case, out / name)
        parts.append(text)
        for v in verdicts:
            tally[v] = tally.get(v, 0) + 1
        print(f"reproduce: {case.id}: {', '.join(verdicts)}", flush=True)
    summary = ", ".join(f"{n} {v}" for v, n in sorted(tally.items()))
    doc = HEADER.format(summary=summary, margin=MARGIN) + "\n".join(parts)
    path = Path(options.doc) if Path(options.doc).is_absolute() else REPO / options.doc
    path.write_text(doc)
    print(f"reproduce: wrote {path} ({summary})")


HEADER = """# Reproductions: published results at small scale

Written by `python3 scripts/reproduce.py` (70 minutes on 2 cores from nothing, measured; runs already in
runs/ are reused): do not edit by hand. Each case is a scenario in `reproductions/` run at three
training seeds (initial weights and batch order); every loss is the **final eval loss of locosim's tiny
model** (a 2-layer Llama of d 64 trained for a few hundred steps on the King James Bible), not the
papers' models. What is compared is the papers' *relative* result: an ordering or an equality.

A claim compares configurations trained at the same seeds, so it is read on the paired difference
d = loss(b) − loss(a) over the seeds, with its 95% Student-t interval. "a below b" is **reproduced**
when the interval lies above 0, **not reproduced** when it lies below 0 (the published ordering is
reversed here), **inconclusive** when it includes 0. "a ≈ b" is reproduced when the interval lies
inside ±{margin} nats (about 2% in perplexity), not reproduced when it lies wholly outside, inconclusive
otherwise. Tuned configurations are taken at their best point of a grid by mean validation loss (a split
the table never reports). A result that does not hold at this scale is reported with its numbers: it
says what the small model does, not what the paper's model did.

Verdicts: {summary}.

"""

if __name__ == "__main__":
    main()
