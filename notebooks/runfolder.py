"""Reading locosim run folders for the notebooks: which run, which policies, their files, where figures go.

Only reads run folders: every number a notebook plots comes from files the simulator wrote
(metrics.csv, events.csv, links.csv, summary.json, summary.csv, seeds.csv). Parameters come from the environment:
  LOCOSIM_RUN      the run folder, runs/<scenario> (default: the newest folder under runs/, said on stderr;
                   a run written elsewhere with `locosim run -o DIR` needs LOCOSIM_RUN=DIR/<scenario>)
  LOCOSIM_POLICY   the policy to show where a notebook shows one (bandwidth.ipynb, timeline.ipynb; default:
                   the run's first)
  LOCOSIM_FIGURES  where PNGs are saved (default: <run>/figures)
The figures themselves are figures.py's, shared with `locosim plot` and `locosim report --html`.
"""
import json
import os
import re
import sys
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
    if need_grid:  # a run at several seeds is a grid too (a point per seed): a sweep only with other keys
        candidates = [p for p in candidates if not is_seeded(p) or sweep_keys(p)]
    if not candidates:
        what = "sweep (a scenario with a sweep: block)" if need_grid else "run folder"
        raise FileNotFoundError(f"no {what} under runs/: run `build/locosim run <scenario>` or set LOCOSIM_RUN")
    newest = max(candidates, key=lambda p: (p / "summary.csv").stat().st_mtime)
    print(f"LOCOSIM_RUN is not set: the newest run under {REPO / 'runs'} is {newest} (a run written elsewhere "
          "with -o: set LOCOSIM_RUN to its folder)", file=sys.stderr)
    return newest


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


# The CSVs parsed last, by (path, modification time, size): a run's figures read events.csv and
# links.csv several times each, and parsing them was two thirds of `locosim plot` at 4096 workers.
# A file written again (a notebook that runs the simulation anew) is parsed again.
_TABLES = {}
_TABLES_KEPT = 6


def table(run, policy, name):
    """One of a policy folder's CSV files (metrics, events or links) as a DataFrame (the caller's own copy).

    metrics' `sync` is "", "committed" or "aborted"; run folders from before the changing world have no
    such column and read as "" (no sync). events' `peer` is NaN where there is none (compute, wait, away,
    discard, a join restored locally), whether the file left it empty or wrote -1."""
    path = Path(run) / policy / f"{name}.csv"
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    frame = _TABLES.pop(key, None)
    if frame is None:
        frame = pd.read_csv(path)
        if name == "metrics":
            # an empty cell reads as NaN, and a column of only empty cells as floats: make it text throughout
            frame["sync"] = frame["sync"].fillna("").astype(str) if "sync" in frame else ""
        if name == "events":
            frame["peer"] = frame["peer"].where(frame["peer"] >= 0)
    _TABLES[key] = frame  # the most recent last
    while len(_TABLES) > _TABLES_KEPT:
        del _TABLES[next(iter(_TABLES))]
    return frame.copy()


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


# Runs at several seeds (`seeds: N`): runs/<scenario>/[<point>+]seed=<s>/<policy>/, summary.csv a row per
# seed (point, [sweep keys,] seed, label, ...), seeds.csv a row per policy and sweep point (the mean and
# the 95% interval's half-width of each metric, as the table printed them).

def is_seeded(run):
    """Whether run is a run at several seeds (it has a seeds.csv)."""
    return (Path(run) / "seeds.csv").exists()


def sweep_keys(run):
    """The sweep keys of a grid run/summary.csv (the columns between point and label), the seed left out."""
    columns = list(pd.read_csv(Path(run) / "summary.csv", nrows=0).columns)
    if not columns or columns[0] != "point":
        return []
    return [c for c in columns[1:columns.index("label")] if c != "seed"]


def seeded_run_folder():
    """$LOCOSIM_RUN, else the most recently written runs/<scenario> that has a seeds.csv."""
    if os.environ.get("LOCOSIM_RUN"):
        run = Path(os.environ["LOCOSIM_RUN"])
        if not is_seeded(run):
            raise FileNotFoundError(f"{run} has no seeds.csv: it is not a run at several seeds "
                                    "(`seeds: 3` in the scenario, or `build/locosim run <scenario> --seeds 3`)")
        return run
    candidates = [p.parent for p in (REPO / "runs").glob("*/seeds.csv")]
    if not candidates:
        raise FileNotFoundError("no run at several seeds under runs/: run `build/locosim run <scenario> --seeds 3` "
                                "or set LOCOSIM_RUN")
    return max(candidates, key=lambda p: (p / "seeds.csv").stat().st_mtime)


def base_point(point):
    """A seed's point name without its seed: 'seed=2' -> '', 'bandwidth=10Mbps+seed=2' -> 'bandwidth=10Mbps'."""
    return re.sub(r"(^|\+)seed=[^+]*$", "", str(point))


def seed_runs(run):
    """One row per seed and policy from run/summary.csv: point (the sweep point without the seed, '' without
    a sweep), the sweep keys, seed, label, and folder (the policy's run folder of that seed)."""
    rows = pd.read_csv(Path(run) / "summary.csv", dtype={"point": str, "label": str})
    folders = [Path(run) / point / label for point, label in zip(rows["point"], rows["label"])]
    keys = sweep_keys(run)
    out = rows[keys + ["seed", "label"]].copy()
    out.insert(0, "point", rows["point"].map(base_point))
    out["folder"] = folders
    return out


def seeds_table(run):
    """run/seeds.csv: a row per policy (and sweep point; point is '' without a sweep), <metric>_mean and
    <metric>_ci95 (NaN where undefined: one seed, or no seed reached the target)."""
    table = pd.read_csv(Path(run) / "seeds.csv", dtype={"point": str, "label": str})
    if "point" not in table:
        table.insert(0, "point", "")
    table["point"] = table["point"].fillna("")
    return table


_T975 = [12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041,
         2.2621572, 2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053,
         2.1098156, 2.1009220, 2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986,
         2.0595386, 2.0555294, 2.0518305, 2.0484071, 2.0452296, 2.0422725]


def student_t975(df):
    """t(0.975, df), Student's t quantile of a two-sided 95% interval (the simulator's report/confidence.cpp:
    a table for df 1..30, the Cornish-Fisher expansion around the normal quantile beyond)."""
    if df < 1:
        raise ValueError("student_t975: degrees of freedom must be >= 1")
    if df <= 30:
        return _T975[int(df) - 1]
    z, v = 1.959963984540054, float(df)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4))


def interval95(values):
    """(mean, half-width, n) of the 95% interval of the mean of values (NaNs left out): t(0.975, n-1) * s / sqrt(n);
    the half-width is NaN below two values, the mean NaN with none."""
    values = [float(v) for v in values if not pd.isna(v)]
    n = len(values)
    if n == 0:
        return float("nan"), float("nan"), 0
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan"), n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    return mean, student_t975(n - 1) * sd / n ** 0.5, n


def eval_curve(folder):
    """A policy run folder's eval curve from its summary.json: a DataFrame (time_s, eval_loss)."""
    curve = json.loads((Path(folder) / "summary.json").read_text()).get("eval_curve") or []
    return pd.DataFrame(curve, columns=["time_s", "eval_loss"], dtype=float)


def curve_band(curves):
    """The mean and 95% interval over seeds of step-function curves (time_s, eval_loss), read at the union of
    their times: each seed's value at t is its last point at or before t (none before its first point, its
    last one after its end). A DataFrame (time_s, mean, ci95, n)."""
    curves = [c.sort_values("time_s") for c in curves if len(c)]
    times = sorted(set().union(*(set(c.time_s) for c in curves))) if curves else []
    at = []
    for c in curves:
        index = c.time_s.searchsorted(times, side="right") - 1
        at.append([c.eval_loss.iloc[i] if i >= 0 else float("nan") for i in index])
    rows = [(t, *interval95([seed[k] for seed in at])) for k, t in enumerate(times)]
    return pd.DataFrame(rows, columns=["time_s", "mean", "ci95", "n"])
