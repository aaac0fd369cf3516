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
KINDS = ("scale", "scale_ratio", "floor", "floor_ratio", "swarm", "overhead", "pool", "peer")

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


def last(rows, kind, **match):
    """The log's last line of `kind` whose fields match, as (fields, line); None if there is none."""
    found = [(f, line) for k, f, line in rows if k == kind and all(f.get(key) == str(v) for key, v in match.items())]
    return found[-1] if found else None


def targets(rows, name):
    """The table's rows: (target, measured, verdict)."""
    def check(what, found, key, limit, shown, floor=False):
        if not found:
            return what, "not in the log", "not measured"
        fields, line = found
        x = number(fields, key, name, line)
        return what, shown(x, fields), verdict(x >= limit if floor else x <= limit, x, limit, floor)

    table = []
    for collective in ("ring", "relay"):
        run = last(rows, "scale", collective=collective, workers=SCALE_WORKERS, rounds=SCALE_ROUNDS)
        what = f"{SCALE_WORKERS} workers x {SCALE_ROUNDS} rounds, {collective}"
        table.append(check(f"{what}: ≤ {MAX_WALL_S:g} s", run, "wall_s", MAX_WALL_S, lambda x, f: f"{x:.2f} s"))
        table.append(check(f"{what}: ≤ {MAX_PEAK_MIB:g} MiB", run, "peak_mib", MAX_PEAK_MIB,
                           lambda x, f: f"{x:.0f} MiB"))
    for collective in ("ring", "relay"):
        table.append(check(f"cost of a worker-round, largest / smallest workers, {collective}: ≤ {MAX_COST_RATIO:g}",
                           last(rows, "scale_ratio", collective=collective), "marginal_ratio", MAX_COST_RATIO,
                           shown_ratio))
    table.append(floor_row(rows, name))
    table.append(check(f"scenarios/swarm-10k.yaml at {SWARM_ROUNDS} rounds: ≤ {MAX_SWARM_S:g} s",
                       last(rows, "swarm", rounds=SWARM_ROUNDS), "wall_s", MAX_SWARM_S,
                       lambda x, f: f"{x:.2f} s, {f.get('peak_mib', '?')} MiB"))
    table.append(check(f"a full run's wall time over its LibTorch work: ≤ {MAX_OVERHEAD:g}x", last(rows, "overhead"),
                       "ratio", MAX_OVERHEAD, lambda x, f: f"{x:.3g}x"))
    table.append(check(f"the step pool, 2 threads against 1: ≥ {MIN_POOL:g}x", last(rows, "pool"), "speedup",
                       MIN_POOL, lambda x, f: f"{x:.3g}x", floor=True))
    table.append(peer_target(rows, name))
    table.append(peer_native_row(rows, name))
    return table


def shown_ratio(ratio, fields):
    """A `*_ratio` line's marginal ratio as the table shows it, with its workers and its CPU-time twin."""
    return f"{ratio:.2f} (workers {fields.get('workers', '?')}; from CPU time {fields.get('marginal_cpu_ratio', '?')})"


def floor_row(rows, name):
    """The same ratio for SimGrid alone shaped as the relay (bench/engine_floor.cpp): shown beside the
    targets, not one; what of locosim's growth the engine makes by itself."""
    what = "the same, the simulation engine alone shaped as the relay (`bench/engine_floor.cpp`)"
    found = last(rows, "floor_ratio")
    if not found:
        return what, "not in the log", "for comparison: not measured"
    fields, line = found
    ratio = number(fields, "marginal_ratio", name, line)
    above = "above" if ratio > MAX_COST_RATIO else "within"
    return what, shown_ratio(ratio, fields), f"for comparison: {above} the {MAX_COST_RATIO:g} limit"


def peer_target(rows, name):
    """Every run of the peer benchmark at or above the floor, PEER_RUNS of them at least."""
    what = f"locosim over the Python DiLoCo loop, worker-steps per second: ≥ {MIN_PEER:g}x, {PEER_RUNS} runs in a row"
    ratios = [number(f, "ratio", name, line) for kind, f, line in rows if kind == "peer"]
    if not ratios:
        return what, "not in the log (no Python loop given)", "not measured"
    measured = ", ".join(f"{r:.2f}" for r in ratios)
    if min(ratios) < MIN_PEER:
        return what, measured, verdict(False, min(ratios), MIN_PEER, floor=True)
    if len(ratios) < PEER_RUNS:
        return what, measured, f"not settled: {len(ratios)} of {PEER_RUNS} runs"
    return what, measured, "met"


def peer_native_row(rows, name):
    """The same runs with locosim on the kernels the libraries pick, as the Python loop is: shown beside
    the target, not one (a log from before bench/peer.py measured it has none)."""
    what = "the same, locosim on this CPU's native kernels as the Python loop is (`native_ratio`)"
    ratios = [number(f, "native_ratio", name, line) for kind, f, line in rows if kind == "peer" and "native_ratio" in f]
    if not ratios:
        return what, "not in the log", "for comparison: not measured"
    lowest = min(ratios)
    floor = f"all ≥ {MIN_PEER:g}x" if lowest >= MIN_PEER else f"{lowest / MIN_PEER:.2f}x the floor at the lowest"
    return what, ", ".join(f"{r:.2f}" for r in ratios), f"for comparison: {floor}"


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
