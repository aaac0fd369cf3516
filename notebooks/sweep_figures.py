"""The figures of several runs: a sweep's (compute utilization and wall-clock against a swept key) and
a run's at several seeds (loss bands, final eval loss with its 95% interval). figures.py, which the
notebooks and `locosim plot` import, offers them too."""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are saved as files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import runfolder as rf  # noqa: E402
from figure_style import PLAIN, line_style, policy_colors, run_title, target_line, time_unit  # noqa: E402


class NotASweep(ValueError):
    """The sweep figure was asked of a run that has no sweep: block."""


def sweep_grid(run, x=None):
    """(grid, x key, other keys): a sweep's summary.csv, each point's mean over its seeds if it has seeds,
    with x_value the x key's values as numbers (bandwidths in bits/s) where they are numbers.
    Raises NotASweep, with what to do instead, for a run without a sweep: block."""
    run = Path(run)
    if not (run / "summary.csv").exists():
        raise NotASweep(f"{run} is not a run folder (no summary.csv): the sweep figure needs runs/<scenario> "
                        "of a scenario with a sweep: block")
    if not rf.is_grid(run):
        raise NotASweep(f"{run} is not a sweep (its summary.csv has no point column): the sweep figure needs a "
                        "run of a scenario with a sweep: block, e.g. scenarios/tests/sweep-small.yaml")
    keys = rf.sweep_keys(run)
    if not keys:
        raise NotASweep(f"{run} is a run at several seeds without a sweep: nothing to put on the x axis "
                        "(its loss bands: figures.loss_bands, notebooks/seeds.ipynb)")
    grid = pd.read_csv(run / "summary.csv", dtype={"point": str})
    if "seed" in grid:
        grid["point"] = grid.point.map(rf.base_point)
        grid = grid.groupby(["point"] + keys + ["label"], sort=False, as_index=False)[
            ["compute_utilization", "wall_clock_s"]].mean()
    x = x or next((k for k in keys if "bandwidth" in k), keys[0])
    if x not in keys:
        raise NotASweep(f"no sweep key {x!r} in {run}: its keys are {keys}")
    try:
        grid["x_value"] = grid[x].map(rf.to_number)
    except ValueError:
        grid["x_value"] = grid[x].map({v: i for i, v in enumerate(dict.fromkeys(grid[x]))})
        grid.attrs["categories"] = list(dict.fromkeys(grid[x]))
    return grid, x, [k for k in keys if k != x]


def sweep(run, x=None):
    """Compute utilization and simulated wall-clock against a swept key (default: the first bandwidth), a
    line per policy and per value of the other sweep keys that affect it (the shape of Streaming DiLoCo's
    Figure 4, arXiv 2501.18512)."""
    grid, x, others = sweep_grid(run, x)
    categories = grid.attrs.get("categories")
    bandwidth = categories is None and "bandwidth" in x
    xs = grid.x_value / (1e6 if bandwidth else 1)
    grid = grid.assign(x_shown=xs)
    fig, (util, wall) = plt.subplots(1, 2, figsize=(12, 4.8))
    seen = []
    for i, ((label, *rest), rows) in enumerate(grid.groupby(["label"] + others, sort=False)):
        rows = rows.sort_values("x_shown")
        curve = list(rows.compute_utilization) + list(rows.wall_clock_s)
        if (label, curve) in seen:  # a policy the other keys do not affect (ddp under inner_steps): once
            continue
        seen.append((label, curve))
        name = label + "".join(f", {k.split('.')[-1]}={v}" for k, v in zip(others, rest)
                               if "[" + label + "]" in k or "[" not in k)
        style = dict(line_style(len(seen) - 1), marker="o")
        util.plot(rows.x_shown, rows.compute_utilization * 100, label=name, **style)
        wall.plot(rows.x_shown, rows.wall_clock_s / 3600, label=name, **style)
    xlabel = f"{x} (Mbps)" if bandwidth else x
    span = grid.x_shown.max() / grid.x_shown.min() if categories is None and grid.x_shown.min() > 0 else 1
    for ax in (util, wall):
        if categories is not None:
            ax.set_xticks(range(len(categories)), categories)
        elif span >= 10:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(PLAIN)
        ax.set_xlabel(xlabel + (", log" if span >= 10 else ""))
        ax.grid(True, alpha=0.3)
    util.set(ylabel="compute utilization (%)", ylim=(0, 100), title=f"compute utilization vs {x.split('.')[-1]}")
    wall.set_yscale("log")
    wall.yaxis.set_major_formatter(PLAIN)
    wall.set(ylabel="simulated wall-clock (h, log)", title=f"time to train vs {x.split('.')[-1]}")
    util.legend(fontsize="small")
    fig.tight_layout()
    return fig


def seed_curves(run):
    """{(point, label): curve_band} of a run at several seeds."""
    runs = rf.seed_runs(run)
    return runs, {key: rf.curve_band([rf.eval_curve(f) for f in rows.folder])
                  for key, rows in runs.groupby(["point", "label"], sort=False)}


def loss_bands(run):
    """Eval loss against simulated wall-clock (log), the mean over seeds with its 95% band; a panel per
    sweep point."""
    run = Path(run)
    runs, bands = seed_curves(run)
    points = list(dict.fromkeys(runs.point))
    labels = list(dict.fromkeys(runs.label))
    end = max((b.time_s.max() for b in bands.values() if len(b)), default=0)
    unit, scale = time_unit(end)
    columns = min(3, len(points))
    grid_rows = -(-len(points) // columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(6 * columns, 4.2 * grid_rows), sharey=True, squeeze=False)
    colors = policy_colors(labels)
    target = None
    for folder in runs.folder:
        target = json.loads((Path(folder) / "summary.json").read_text()).get("target_loss")
        break
    for ax, point in zip(axes.flat, points):
        for label in labels:
            band = bands.get((point, label))
            if band is None or band.empty:
                continue
            t = band.time_s / scale
            n = int(band.n.max())
            ax.step(t, band["mean"], where="post", color=colors[label], label=f"{label} ({n} seeds)")
            ax.fill_between(t, band["mean"] - band.ci95, band["mean"] + band.ci95, step="post",
                            color=colors[label], alpha=0.25, linewidth=0)
            last = band.iloc[-1]  # the step's last point has no width: its mean and interval as a dot and bar
            ax.errorbar(last.time_s / scale, last["mean"], yerr=np.nan_to_num(last.ci95), fmt="o",
                        color=colors[label], capsize=3, markersize=4)
        target_line(ax, target)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(PLAIN)
        ax.set(xlabel=f"simulated wall-clock ({unit}, log)", title=point or run_title(run))
        ax.legend(fontsize="small")
    for ax in axes[:, 0]:
        ax.set_ylabel("eval loss (mean over seeds, 95% band)")
    for ax in list(axes.flat)[len(points):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def final_eval_loss(run):
    """The final eval loss's mean over seeds with seeds.csv's 95% interval, each seed as a dot."""
    run = Path(run)
    runs = rf.seed_runs(run)
    seeds = rf.seeds_table(run)
    points = list(dict.fromkeys(runs.point))
    labels = list(dict.fromkeys(runs.label))
    colors = policy_colors(labels)
    width = 0.8 / len(labels)
    fig, ax = plt.subplots(figsize=(max(6, 1.0 * len(points) * len(labels) + 2), 4.5))
    x = np.arange(len(points))
    low, high = [], []
    for i, label in enumerate(labels):
        rows = seeds[seeds.label == label].set_index("point").reindex(points)
        mean, ci = rows.final_eval_loss_mean, rows.final_eval_loss_ci95.fillna(0)
        bars = ax.bar(x + i * width, mean, width, yerr=ci, capsize=4, color=colors[label], alpha=0.8,
                      label=f"{label} ({int(rows.seeds.max())} seeds)")
        for bar, m, c in zip(bars, mean, ci):
            ax.annotate(f"{m:.3f} ± {c:.3f}", (bar.get_x() + bar.get_width() / 2, m + c), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize="x-small")
        per_seed = runs[runs.label == label]
        finals = [rf.summary(f.parent, f.name)["final_eval_loss"] for f in per_seed.folder]
        ax.plot(np.array([points.index(p) for p in per_seed.point]) + i * width, finals, ".", color="black",
                markersize=4)
        low += list(mean - ci) + finals
        high += list(mean + ci) + finals
    span = np.nanmax(high) - np.nanmin(low)
    ax.set_ylim(np.nanmin(low) - 0.3 * span - 1e-3, np.nanmax(high) + 0.15 * span + 1e-3)
    ax.set_xticks(x + width * (len(labels) - 1) / 2, [p or run_title(run) for p in points],
                  rotation=30 if len(points) > 3 else 0, ha="right" if len(points) > 3 else "center")
    ax.set(ylabel="final eval loss", title="final eval loss: mean over seeds ± 95% interval (Student t)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
