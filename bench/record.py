#!/usr/bin/env python3
"""record: a `make bench` log's figures, and where they stand against the targets, into bench/README.md.

    python3 bench/record.py machine                    # the line `make bench` starts its log with
    python3 bench/record.py write build/bench.txt      # into bench/README.md's latest block

`write` replaces what stands between `<!-- bench: latest -->` and `<!-- /bench -->` with the machine
and commit the log was made on, a table of the targets (each with the figure that answers it, taken
from the log, and whether it is met) and the log's lines as printed. So the figures at the top of
bench/README.md are always a whole `make bench` of one commit on one machine, never typed by hand.
A target the log has no figure for is `not measured`. Exit 2, naming the file, on a log without a
machine line or without any benchmark line, or a README without the block.
"""
import argparse
import os
import pathlib
import platform
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- bench: latest -->", "<!-- /bench -->"
KINDS = ("scale", "scale_ratio", "swarm", "overhead", "pool", "peer")

# The targets, in one place (bench/README.md prints them with each figure).
SCALE_WORKERS, SCALE_ROUNDS = 4096, 100  # bench/scale.py's largest point
SWARM_ROUNDS = 100
MAX_WALL_S = 10.0       # SCALE_WORKERS x SCALE_ROUNDS, timing-only
MAX_PEAK_MIB = 1024.0   # the same runs' peak memory
MAX_COST_RATIO = 1.25   # cost of one more worker-round at 4096 workers over that at 256
MAX_SWARM_S = 30.0      # scenarios/swarm-10k.yaml at 100 rounds
MAX_OVERHEAD = 1.10     # a full run's wall time over its LibTorch work
MIN_POOL = 1.8          # the step pool's speed-up, 2 threads against 1
MIN_PEER = 1.5          # locosim's worker-steps per second over the Python loop's, in each run
PEER_RUNS = 3           # ... that many runs in a row


class Refused(Exception):
    """Bad input: the message names the file and what is wrong."""


def machine_line():
    """`machine commit=... date=... cores=... memory_gib=... cpu=...` (cpu last: it has spaces)."""
    def git(*args):
        result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if commit != "unknown" and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+changes"
    cpu = platform.processor() or "unknown"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"machine commit={commit} date={time.strftime('%Y-%m-%d')} cores={os.cpu_count()} "
            f"memory_gib={memory_gib:.1f} cpu={cpu}")


def parse(text, name):
    """The log's lines: (machine fields, [(kind, fields, line)]). Lines of other kinds are left out."""
    machine, rows = None, []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "machine":
            head, _, cpu = rest.partition(" cpu=")
            machine = dict(token.split("=", 1) for token in head.split() if "=" in token)
            machine["cpu"] = cpu.strip() or "unknown"
        elif line.startswith("peer skipped"):  # make bench without a Python loop: kept as printed
            rows.append(("peer_skipped", {}, line))
        elif kind in KINDS:
            fields = {}
            for token in rest.split():
                key, eq, value = token.strip("()").partition("=")
                if eq:
                    fields[key] = value
            rows.append((kind, fields, line))
    if machine is None:
        raise Refused(f"{name}: no `machine` line: make a log with `make bench`, which starts with one")
    if not any(kind in KINDS for kind, _, _ in rows):
        raise Refused(f"{name}: no benchmark line ({', '.join(KINDS)})")
    return machine, rows


def number(fields, key, name, line):
    try:
        return float(fields[key])
    except (KeyError, ValueError):
        raise Refused(f"{name}: `{key}=` is missing or not a number in: {line}") from None


def verdict(ok, figure, target, floor=False):
    """`met`, or how far off: the figure as a multiple of its limit (or of its floor)."""
    if ok:
        return "met"
    return f"**not met**: {figure / target:.2f}x the {'floor' if floor else 'limit'}"


def targets(rows, name):
    """The table's rows: (target, measured, verdict)."""
    table = []
    scale = [(f, line) for kind, f, line in rows if kind == "scale"]
    for collective in ("ring", "relay"):
        runs = [(f, line) for f, line in scale if f.get("collective") == collective and
                f.get("workers") == str(SCALE_WORKERS) and f.get("rounds") == str(SCALE_ROUNDS)]
        what = f"{SCALE_WORKERS} workers x {SCALE_ROUNDS} rounds, {collective}"
        if not runs:
            table.append((f"{what}: ≤ {MAX_WALL_S:g} s and ≤ {MAX_PEAK_MIB:g} MiB", "not in the log", "not measured"))
            continue
        f, line = runs[-1]
        wall, peak = number(f, "wall_s", name, line), number(f, "peak_mib", name, line)
        table.append((f"{what}: ≤ {MAX_WALL_S:g} s", f"{wall:.2f} s", verdict(wall <= MAX_WALL_S, wall, MAX_WALL_S)))
        table.append((f"{what}: ≤ {MAX_PEAK_MIB:g} MiB", f"{peak:.0f} MiB",
                      verdict(peak <= MAX_PEAK_MIB, peak, MAX_PEAK_MIB)))
    for collective in ("ring", "relay"):
        ratios = [(f, line) for kind, f, line in rows if kind == "scale_ratio" and f.get("collective") == collective]
        what = f"cost of a worker-round, largest / smallest workers, {collective}: ≤ {MAX_COST_RATIO:g}"
        if not ratios:
            table.append((what, "not in the log", "not measured"))
            continue
        f, line = ratios[-1]
        ratio = number(f, "marginal_ratio", name, line)
        measured = f"{ratio:.2f} (workers {f.get('workers', '?')}; from CPU time {f.get('marginal_cpu_ratio', '?')})"
        table.append((what, measured, verdict(ratio <= MAX_COST_RATIO, ratio, MAX_COST_RATIO)))
    swarm = [(f, line) for kind, f, line in rows if kind == "swarm" and f.get("rounds") == str(SWARM_ROUNDS)]
    what = f"scenarios/swarm-10k.yaml at {SWARM_ROUNDS} rounds: ≤ {MAX_SWARM_S:g} s"
    if swarm:
        f, line = swarm[-1]
        wall = number(f, "wall_s", name, line)
        table.append((what, f"{wall:.2f} s, {f.get('peak_mib', '?')} MiB", verdict(wall <= MAX_SWARM_S, wall, MAX_SWARM_S)))
    else:
        table.append((what, "not in the log", "not measured"))
    for kind, key, what, limit, floor in (
            ("overhead", "ratio", f"a full run's wall time over its LibTorch work: ≤ {MAX_OVERHEAD:g}x", MAX_OVERHEAD, False),
            ("pool", "speedup", f"the step pool, 2 threads against 1: ≥ {MIN_POOL:g}x", MIN_POOL, True)):
        found = [(f, line) for k, f, line in rows if k == kind]
        if not found:
            table.append((what, "not in the log", "not measured"))
            continue
        f, line = found[-1]
        value = number(f, key, name, line)
        table.append((what, f"{value:.3g}x", verdict(value >= limit if floor else value <= limit, value, limit, floor)))
    peers = [(f, line) for kind, f, line in rows if kind == "peer"]
    what = f"locosim over the Python DiLoCo loop, worker-steps per second: ≥ {MIN_PEER:g}x, {PEER_RUNS} runs in a row"
    ratios = [number(f, "ratio", name, line) for f, line in peers]
    if not ratios:
        table.append((what, "not in the log (no Python loop given)", "not measured"))
    else:
        measured = ", ".join(f"{r:.2f}" for r in ratios)
        low = min(ratios)
        if low < MIN_PEER:
            table.append((what, measured, verdict(False, low, MIN_PEER, True)))
        elif len(ratios) < PEER_RUNS:
            table.append((what, measured, f"not settled: {len(ratios)} of {PEER_RUNS} runs"))
        else:
            table.append((what, measured, "met"))
    return table


def block(machine, rows, table, log_name):
    lines = [BEGIN,
             f"`make bench` at commit {machine.get('commit', 'unknown')} on {machine.get('date', 'an unknown date')}: "
             f"{machine['cpu']}, {machine.get('cores', '?')} cores, {machine.get('memory_gib', '?')} GiB. Written by "
             f"`python3 bench/record.py write {log_name}` from that log; the targets are bench/record.py's.",
             "", "| target | measured | |", "|---|---|---|"]
    lines += [f"| {target} | {measured} | {mark} |" for target, measured, mark in table]
    lines += ["", "```"] + [line for _, _, line in rows] + ["```", END]
    return "\n".join(lines)


def write(log, readme):
    try:
        text = pathlib.Path(log).read_text()
    except OSError as e:
        raise Refused(f"{log}: cannot read it: {e.strerror}") from None
    machine, rows = parse(text, log)
    table = targets(rows, log)
    try:
        page = pathlib.Path(readme).read_text()
    except OSError as e:
        raise Refused(f"{readme}: cannot read it: {e.strerror}") from None
    begin, end = page.find(BEGIN), page.find(END)
    if begin < 0 or end < begin:
        raise Refused(f"{readme}: no `{BEGIN}` ... `{END}` block to write the figures into")
    page = page[:begin] + block(machine, rows, table, log) + page[end + len(END):]
    pathlib.Path(readme).write_text(page)
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("machine", help="print the machine line a bench log starts with")
    put = sub.add_parser("write", help="write a bench log's figures into bench/README.md")
    put.add_argument("log")
    put.add_argument("--readme", default=str(ROOT / "bench" / "README.md"))
    args = parser.parse_args()
    if args.command == "machine":
        print(machine_line(), flush=True)
        return 0
    try:
        table = write(args.log, args.readme)
    except Refused as e:
        print(f"record: {e}", file=sys.stderr)
        return 2
    for target, measured, mark in table:
        print(f"{mark.replace('**', '')}: {target}: {measured}")
    print(f"written into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
