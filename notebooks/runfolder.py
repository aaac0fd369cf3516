"""Reading locosim run folders for the notebooks: which run, which policies, their files, where figures go.

Only reads run folders: every number a notebook plots comes from files the simulator wrote
(metrics.csv, events.csv, links.csv, summary.json, summary.csv). Parameters come from the environment:
  LOCOSIM_RUN      the run folder, runs/<scenario> (default: the newest folder under runs/)
  LOCOSIM_POLICY   the policy to show where a notebook shows one (default: the run's first)
  LOCOSIM_FIGURES  where PNGs are saved (default: <run>/figures)
"""
import json
import os
import re
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent


def run_folder(need_grid=False):
    """$LOCOSIM_RUN, else the most recently written runs/<scenario>: a sweep's if need_grid, else one
    with policy folders (a sweep point, runs/<scenario>/<point>, is such a run too)."""
    if os.environ.get("LOCOSIM_RUN"):
        return Path(os.environ["LOCOSIM_RUN"])
    candidates = [p.parent for p in (REPO / "runs").glob("*/summary.csv")]
    candidates = [p for p in candidates if is_grid(p) == need_grid]
    if not candidates:
        raise FileNotFoundError("no run folder under runs/: run `build/locosim run <scenario>` or set LOCOSIM_RUN")
    return max(candidates, key=lambda p: (p / "summary.csv").stat().st_mtime)


def is_grid(run):
    """Whether run/summary.csv covers a sweep (its first column is the grid point)."""
    return (run / "summary.csv").read_text().startswith("point,")


def figures_folder(run):
    folder = Path(os.environ.get("LOCOSIM_FIGURES") or Path(run) / "figures")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def policies(run):
    """The run's policy labels, in the scenario's order."""
    return list(pd.read_csv(Path(run) / "summary.csv")["label"])


def chosen_policy(run):
    return os.environ.get("LOCOSIM_POLICY") or policies(run)[0]


def summary(run, policy):
    return json.loads((Path(run) / policy / "summary.json").read_text())


def table(run, policy, name):
    """One of a policy folder's CSV files (metrics, events or links) as a DataFrame.

    metrics' `sync` is "", "committed" or "aborted"; run folders from before the changing world have no
    such column and read as "" (no sync). events' `peer` is NaN where there is none (compute, wait, away,
    discard, a join restored locally), whether the file left it empty or wrote -1."""
    frame = pd.read_csv(Path(run) / policy / f"{name}.csv")
    if name == "metrics":
        # an empty cell reads as NaN, and a column of only empty cells as floats: make it text throughout
        frame["sync"] = frame["sync"].fillna("").astype(str) if "sync" in frame else ""
    if name == "events":
        frame["peer"] = frame["peer"].where(frame["peer"] >= 0)
    return frame


def worker_label(worker, workers, hosts):
    """'w0 home-0' for a worker, 'relay' for an id past the workers (a relay server records as world_size)."""
    if worker >= workers:
        return "relay"
    return f"w{worker} {hosts.get(worker, '')}".strip()


def hosts(links):
    """worker -> host name, from links.csv's own-link rows."""
    own = links.dropna(subset=["worker"])
    return {int(w): h for w, h in zip(own["worker"], own["host"])}


UNITS = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}


def to_number(text):
    """A sweep value as a number: '100 Mbps' -> 1e8 (bits/s), '50' -> 50.0."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z/]*)\s*", str(text))
    if not match:
        raise ValueError(f"not a number: {text!r}")
    value, unit = float(match.group(1)), match.group(2).lower()
    return value * UNITS.get(unit, 1)


def worker_count(run, policy):
    """How many workers trained (ids at or past it are servers such as a relay)."""
    return table(run, policy, "metrics").worker.nunique()



def availability(run, policy):
    """When each worker was in the group: one row (worker, start_s, end_s) per interval.

    A worker is in the group from 0 to the run's end (its wall-clock) except during its `away` events
    (its host failed, until it was back in, its `join` download included). Overlapping away intervals are
    merged, so that a worker is never counted out twice. A run without away events gives each worker the
    whole run."""
    info = summary(run, policy)
    end = info["wall_clock_s"]
    events = table(run, policy, "events")
    away = events[events.kind == "away"].sort_values("start_s")
    rows = []
    for worker in range(info.get("workers") or worker_count(run, policy)):
        start = 0.0  # when the worker's current stay in the group began
        for gone in away[away.worker == worker].itertuples():
            if gone.start_s > start:
                rows.append((worker, start, min(gone.start_s, end)))
            start = max(start, gone.end_s)
        if start < end:
            rows.append((worker, start, end))
    return pd.DataFrame(rows, columns=["worker", "start_s", "end_s"])


def workers_available(run, policy):
    """How many workers were in the group over time, as a step function: from each row's time_s on, the
    group had `workers` workers, until the next row. The last row is the run's end and repeats the count
    before it, so that `step(time_s, workers, where="post")` draws the whole run."""
    intervals = availability(run, policy)
    end = summary(run, policy)["wall_clock_s"]
    joins = intervals.start_s.value_counts()
    leaves = intervals.end_s[intervals.end_s < end].value_counts()  # reaching the run's end is no leave
    change = joins.sub(leaves, fill_value=0).sort_index()
    change = change.reindex(change.index.union([0.0]), fill_value=0)  # starts at 0 even if all were away
    steps = pd.DataFrame({"time_s": change.index, "workers": change.cumsum().astype(int).values})
    steps = steps[steps.workers.diff() != 0]  # a leave and a join at the same time change nothing
    last = pd.DataFrame({"time_s": [end], "workers": [steps.workers.iloc[-1]]})
    return pd.concat([steps, last], ignore_index=True)
