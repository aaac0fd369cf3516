"""The figures of a locosim run folder, as matplotlib figures: one place for the plotting code that the
notebooks (notebooks/*.ipynb) and `locosim plot` / `locosim report --html` (scripts/plot_run.py) share.
The figures of several runs (a sweep, seeds) are sweep_figures.py's, their common look figure_style.py's
and saving figure_writer.py's; this module offers them all.

Every function takes a run folder (runs/<scenario>, a sweep point, or a seed's folder) and returns a
matplotlib Figure (or None where there is nothing to show); nothing here reads the environment. The
notebooks' parameters come from the environment through runfolder.py:
  LOCOSIM_RUN      the run folder (default: the newest folder under runs/; a run written elsewhere with
                   `-o` needs LOCOSIM_RUN, or `locosim plot <folder>`, which always names it)
  LOCOSIM_POLICY   the policy the bandwidth and timeline notebooks show (default: the run's first)
  LOCOSIM_FIGURES  where the notebooks save their PNGs (default: <run>/figures)
  LOCOSIM_WINDOW   the timeline's window, "start,end" in simulated seconds
  LOCOSIM_SWEEP_X  the sweep key on the sweep figure's x axis

What each figure answers:
  loss_time        train loss (lines) and eval loss (dots) against simulated wall-clock, log time axis,
                   the target line where the scenario has train.target_loss
  loss_tokens      the same against tokens as priced (timing.tokens_per_step per worker step, else the
                   tokens the small model really trained on), all workers together
  utilization      compute utilization per accelerator type (mean, whiskers min to max over its workers)
  traffic          bytes uploaded and downloaded per worker, log axis (mean, whiskers min to max)
  links_<policy>   link utilization over time: the busiest links (WAN links first) as lines, a heatmap below
  timeline_<p>     what each worker did in one window of simulated time (compute, wait, send, recv)
  availability_<p> workers in the group over time, only for a policy whose world changed
  sweep            a sweep's compute utilization and wall-clock against a swept key (bandwidth by default)
  loss_bands, final_eval_loss   a run at several seeds: means and their 95% intervals
"""
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are saved as files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

import runfolder as rf  # noqa: E402
from figure_style import PLAIN, line_style, policy_colors, run_title, target_line, time_unit  # noqa: E402,F401
from figure_writer import FigureWriter  # noqa: E402,F401
from sweep_figures import (NotASweep, final_eval_loss, loss_bands, seed_curves, sweep,  # noqa: E402,F401
                           sweep_grid)

TOP_LINKS = 8          # link lines drawn at most (WAN links first, then the busiest)
HEATMAP_LINKS = 40     # heatmap rows at most
TIMELINE_WORKERS = 8   # timeline tracks at most


def _resolved_number(run, policy, section, key):
    """A number from a top-level section of the policy's resolved.yaml (machine-written: two-space
    indentation), or None."""
    path = Path(run) / policy / "resolved.yaml"
    if not path.exists():
        return None
    inside = False
    for line in path.read_text().splitlines():
        if re.match(r"^[A-Za-z_]", line):
            inside = line.startswith(section + ":")
            inline = re.search(rf"\b{key}:\s*([0-9.eE+-]+)", line) if inside else None
            if inline:
                return float(inline.group(1))
        elif inside:
            match = re.match(rf"^  {key}:\s*([0-9.eE+-]+)\s*$", line)
            if match:
                return float(match.group(1))
    return None


def priced_ratio(run, policy):
    """Priced tokens per real token: timing.tokens_per_step over batch_size x seq_len (1 without timing)."""
    priced = _resolved_number(run, policy, "timing", "tokens_per_step")
    batch = _resolved_number(run, policy, "train", "batch_size")
    seq = _resolved_number(run, policy, "model", "seq_len")
    if not (priced and batch and seq):
        return 1.0
    return priced / (batch * seq)


def per_step(run, policy):
    """Per step: when the last worker finished it, the tokens all workers had trained on by then (real and
    priced; a worker away for a while adds nothing meanwhile), the mean train loss and the mean eval loss
    where evaluated."""
    metrics = rf.table(run, policy, "metrics")
    steps = metrics.groupby("step").agg(time_s=("time_s", "max"), train_loss=("train_loss", "mean"),
                                        eval_loss=("eval_loss", "mean"))
    by_time = metrics.sort_values("time_s", kind="stable")
    # each worker's tokens column counts up: what its row adds is the difference from its previous row
    total = by_time.groupby("worker").tokens.diff().fillna(by_time.tokens).cumsum().to_numpy()
    at = np.searchsorted(by_time.time_s.to_numpy(), steps.time_s.to_numpy(), side="right") - 1
    steps["tokens"] = total[at]
    steps["priced_tokens"] = steps.tokens * priced_ratio(run, policy)
    return steps


def target_loss(run, policies):
    for p in policies:
        target = rf.summary(run, p).get("target_loss")
        if target is not None and not pd.isna(target):
            return float(target)
    return None


def loss_time(run, policies=None):
    """Loss against simulated wall-clock on a log time axis (an hours-long DDP and a minutes-long DiLoCo
    both readable), with the target line and each policy's time to target."""
    policies = policies or rf.policies(run)
    steps = {p: per_step(run, p) for p in policies}
    unit, scale = time_unit(max(s.time_s.max() for s in steps.values()))
    fig, ax = plt.subplots(figsize=(10, 5))
    colors = policy_colors(policies)
    for p in policies:
        s, info = steps[p], rf.summary(run, p)
        ax.plot(s.time_s / scale, s.train_loss, color=colors[p], alpha=0.8, label=p)
        evals = s.dropna(subset=["eval_loss"])
        ax.plot(evals.time_s / scale, evals.eval_loss, "o", color=colors[p], markersize=4)
        reached = info.get("time_to_target_s")
        if reached is not None and not pd.isna(reached) and info.get("target_loss") is not None:
            ax.plot([reached / scale], [info["target_loss"]], "v", color=colors[p], markersize=9,
                    markeredgecolor="black")
    target_line(ax, target_loss(run, policies))
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(PLAIN)
    ax.set(xlabel=f"simulated wall-clock ({unit}, log)", ylabel="loss (train: line, eval: dots)",
           title=f"{run_title(run)}: loss vs simulated wall-clock" +
           (" (triangle: time to target)" if target_loss(run, policies) is not None else ""))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def loss_tokens(run, policies=None):
    """Loss against tokens trained on, all workers, as priced (timing.tokens_per_step per worker step)."""
    policies = policies or rf.policies(run)
    priced = any(priced_ratio(run, p) != 1.0 for p in policies)
    fig, ax = plt.subplots(figsize=(10, 5))
    colors = policy_colors(policies)
    for p in policies:
        s = per_step(run, p)
        ax.plot(s.priced_tokens / 1e6, s.train_loss, color=colors[p], alpha=0.8, label=p)
        evals = s.dropna(subset=["eval_loss"])
        ax.plot(evals.priced_tokens / 1e6, evals.eval_loss, "o", color=colors[p], markersize=4)
    target_line(ax, target_loss(run, policies))
    what = "priced tokens (timing.tokens_per_step per worker step)" if priced else "tokens trained on"
    ax.set(xlabel=f"{what}, all workers (M)", ylabel="loss (train: line, eval: dots)",
           title=f"{run_title(run)}: loss vs tokens")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def _utilization_groups(run, policy):
    """[(group, workers, mean, min, max)]: per accelerator type from summary.json, then all workers."""
    info = rf.summary(run, policy)
    groups = [(g["accelerator"], g["workers"], g["mean"], g["min"], g["max"])
              for g in info.get("utilization_by_accelerator") or []]
    if len(groups) != 1:
        groups.append(("all", info.get("workers") or rf.worker_count(run, policy), info["compute_utilization"],
                       info.get("utilization_min", info["compute_utilization"]),
                       info.get("utilization_max", info["compute_utilization"])))
    return groups


def _whiskers(mean, low, high):
    """Error bars from the least to the most: never below zero, which matplotlib refuses. Run folders
    written before summary.json clamped its means could hold a mean a rounding error outside the least
    and the most (thousands of equal workers)."""
    return np.clip(np.nan_to_num([mean - low, high - mean]), 0, None)


def utilization(run, policies=None):
    """Compute utilization per accelerator type and policy: the mean over its workers, whiskers from the
    least to the most used. As readable for 4096 workers as for 4."""
    policies = policies or rf.policies(run)
    groups = {p: _utilization_groups(run, p) for p in policies}
    names = list(dict.fromkeys(g[0] for gs in groups.values() for g in gs))
    counts = {}
    for gs in groups.values():
        for name, workers, *_ in gs:
            counts.setdefault(name, workers)
    width = 0.8 / len(policies)
    fig, ax = plt.subplots(figsize=(min(16, max(7, 0.4 * len(names) * len(policies) + 2)), 4.5))
    x = np.arange(len(names))
    colors = policy_colors(policies)
    for i, p in enumerate(policies):
        by_name = {g[0]: g for g in groups[p]}
        mean = np.array([by_name[n][2] * 100 if n in by_name else np.nan for n in names])
        low = np.array([by_name[n][3] * 100 if n in by_name else np.nan for n in names])
        high = np.array([by_name[n][4] * 100 if n in by_name else np.nan for n in names])
        bars = ax.bar(x + i * width, mean, width, color=colors[p], label=p, yerr=_whiskers(mean, low, high),
                      capsize=3)
        if len(names) * len(policies) <= 24:  # else the labels would overlap
            ax.bar_label(bars, labels=[f"{m:.1f}" if not np.isnan(m) else "" for m in mean], fontsize="x-small",
                         padding=2)
    ax.set_xticks(x + width * (len(policies) - 1) / 2,
                  [f"{n}\n({counts[n]} worker{'s' if counts[n] != 1 else ''})" for n in names])
    ax.set(ylabel="compute utilization (%)",
           title="compute utilization per accelerator type\n(share of the wall-clock spent computing; "
           "whiskers: least to most used worker)")
    ax.set_ylim(0, min(105, max(5, ax.get_ylim()[1] * 1.1)))
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def _bytes_per_worker(run, policy, kind):
    """(training workers' bytes, a Series per worker id; servers' bytes, a Series per id) of sends or recvs."""
    events = rf.table(run, policy, "events")
    workers = rf.summary(run, policy).get("workers") or rf.worker_count(run, policy)
    total = events[events.kind == kind].groupby("worker").bytes.sum()
    trained = total.reindex(range(workers), fill_value=0)
    return trained, total[total.index >= workers]


def traffic(run, policies=None):
    """Bytes each worker uploaded and downloaded, per policy, on a log axis (DiLoCo's hundred-fold less
    traffic than DDP stays visible): the mean over workers, whiskers from least to most; a relay or
    parameter server as a hatched bar."""
    policies = policies or rf.policies(run)
    fig, ax = plt.subplots(figsize=(min(16, max(7, 1.4 * len(policies) + 2)), 4.5))
    x = np.arange(len(policies))
    width = 0.2
    seen_server = False
    positive = []
    for j, (kind, name, color) in enumerate([("send", "uploaded", "tab:blue"), ("recv", "downloaded", "tab:orange")]):
        mean, low, high, server = [], [], [], []
        for p in policies:
            trained, servers = _bytes_per_worker(run, p, kind)
            mean.append(trained.mean())
            low.append(trained.min())
            high.append(trained.max())
            server.append(servers.sum() if len(servers) else np.nan)
        mean, low, high = (np.array(v, dtype=float) for v in (mean, low, high))
        shown = np.where(mean > 0, mean, np.nan)
        positive += [v for v in list(mean) + list(server) if v > 0]
        offset = -0.12 if np.any(~np.isnan(server)) else 0
        bars = ax.bar(x + (j - 0.5) * width * 1.1 + offset, shown, width, color=color, label=f"{name} per worker",
                      yerr=_whiskers(mean, low, high), capsize=3)
        ax.bar_label(bars, labels=[_bytes_text(m) for m in mean], fontsize="x-small", padding=3,
                     rotation=90 if len(policies) > 4 else 0)
        if np.any(~np.isnan(server)):
            seen_server = True
            ax.bar(x + (j - 0.5) * width * 1.1 + 0.3, server, width, color=color, hatch="//", alpha=0.5,
                   label=f"{name} by the server")
    ax.set_xticks(x, policies)
    ax.set_yscale("log")
    ax.set(ylabel="bytes (log)", title="bytes up and down per worker (mean; whiskers: least to most)" +
           ("\nhatched: relay or parameter server" if seen_server else ""))
    if positive:  # bars from a decade below the smallest, so that the smallest is a visible bar
        ax.set_ylim(10 ** (np.floor(np.log10(min(positive))) - 1), max(positive) * 30)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def _bytes_text(value):
    if not value > 0:
        return "0"
    for unit, scale in [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)]:
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def link_order(links):
    """Link names: WAN links first (those of no worker, between sites), then by bytes carried, most first;
    links that carried nothing left out."""
    total = links.groupby("link", sort=False).agg(bytes=("bytes", "sum"), direction=("direction", "first"))
    total = total[total.bytes > 0]
    total["wan"] = ~total.direction.isin(["up", "down"])
    return list(total.sort_values(["wan", "bytes"], ascending=[False, False]).index)


def links(run, policy):
    """One policy's link utilization over time: the TOP_LINKS first links of link_order as lines (WAN
    links first, each line its own colour and style), and a heatmap of up to HEATMAP_LINKS links x time."""
    table = rf.table(run, policy, "links")
    order = link_order(table)
    bucket_s = (table.end_s - table.start_s).iloc[0] if len(table) else 0
    end = table.end_s.max() if len(table) else 1
    unit, scale = time_unit(end)
    total_links = table.link.nunique()
    rows = order[:HEATMAP_LINKS]
    fig, (lines_ax, heat_ax) = plt.subplots(2, 1, figsize=(12, 4 + 0.25 * max(len(rows), 4)), sharex=True,
                                            gridspec_kw={"height_ratios": [3, max(2, 0.25 * len(rows))]})
    for i, name in enumerate(order[:TOP_LINKS]):
        one = table[table.link == name]
        lines_ax.step(one.start_s / scale, one.utilization * 100, where="post", label=name, alpha=0.85,
                      **line_style(i))
    note = (f"{min(TOP_LINKS, len(order))} of {len(order)} links that carried traffic"
            f" ({total_links} in all); WAN links first, then by bytes")
    lines_ax.set(ylabel="utilization (%)", ylim=(0, 105),
                 title=f"{policy}: link utilization per {bucket_s:g} s bucket\n{note}")
    if order:
        lines_ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    if rows:
        grid = (table[table.link.isin(rows)].pivot_table(index="link", columns="start_s", values="utilization")
                .reindex(rows))
        image = heat_ax.imshow(grid.values * 100, aspect="auto", cmap="viridis", vmin=0, vmax=100,
                               extent=(0, end / scale, len(rows) - 0.5, -0.5), interpolation="nearest")
        heat_ax.set_yticks(range(len(rows)), rows, fontsize="x-small" if len(rows) > 16 else "small")
        fig.colorbar(image, ax=heat_ax, label="%", pad=0.01)
        heat_ax.set_title(f"{len(rows)} of {len(order)} links with traffic, WAN first" if len(rows) < len(order)
                          else "every link with traffic, WAN first", fontsize="small")
    heat_ax.set_xlabel(f"simulated time ({unit})")
    fig.tight_layout()
    return fig


def up_down(run, policy, top=TOP_LINKS):
    """Each worker's own access link, Mbps out (up) and in (down) over time: the `top` workers that moved
    the most bytes (a note says how many were left out)."""
    table = rf.table(run, policy, "links")
    own = table.dropna(subset=["worker"]).astype({"worker": int})
    own = own[own.direction.isin(["up", "down"])].copy()
    own["mbps"] = own.bytes * 8 / (own.end_s - own.start_s) / 1e6
    hosts = rf.hosts(table)
    n_workers = rf.worker_count(run, policy)
    busiest = list(own.groupby("worker").bytes.sum().sort_values(ascending=False).index[:top])
    shown = sorted(busiest)
    unit, scale = time_unit(own.end_s.max() if len(own) else 1)
    fig, axes = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    for ax, direction in zip(axes, ["up", "down"]):
        for i, w in enumerate(shown):
            one = own[(own.worker == w) & (own.direction == direction)]
            ax.step(one.start_s / scale, one.mbps, where="post", label=rf.worker_label(w, n_workers, hosts),
                    **line_style(i))
        ax.set(ylabel=f"{direction}load (Mbps)")
    left_out = own.worker.nunique() - len(shown)
    axes[0].set_title(f"{policy}: upload vs download per worker" +
                      (f" (the {len(shown)} busiest; {left_out} left out)" if left_out > 0 else ""))
    axes[0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    axes[1].set_xlabel(f"simulated time ({unit})")
    fig.tight_layout()
    return fig


def default_window(events):
    """From a little before the first communication to a little after the first wait on it ends."""
    compute = events[events.kind == "compute"]
    step_s = (compute.end_s - compute.start_s).mean() if len(compute) else 0.0
    sends = events[events.kind == "send"]
    if sends.empty:
        return 0.0, float(events.end_s.max())
    first = sends.start_s.min()
    waits = events[(events.kind == "wait") & (events.end_s > first)]
    last = waits.end_s.min() if not waits.empty else sends.end_s.max()
    return max(0.0, first - 3 * step_s), last + 3 * step_s


TIMELINE_COLORS = {"compute": "tab:green", "wait": "tab:red", "send": "tab:blue", "recv": "tab:orange"}


def timeline(run, policy, window=None, max_workers=TIMELINE_WORKERS):
    """A Gantt chart of one window of simulated time: each worker's compute and wait on its own track,
    its sends and receives below; the first max_workers workers (a note says how many were left out)."""
    events = rf.table(run, policy, "events")
    window = tuple(window) if window else default_window(events)
    rows = [("compute", "wait"), ("send",), ("recv",)]
    shown = events[(events.end_s >= window[0]) & (events.start_s <= window[1])]
    all_workers = sorted(events.worker.unique())
    workers = all_workers[:max_workers]
    n_workers = rf.worker_count(run, policy)
    hosts = rf.hosts(rf.table(run, policy, "links"))
    fig, ax = plt.subplots(figsize=(12, 0.9 + 0.75 * len(workers)))
    labels = []
    for i, w in enumerate(workers):
        for j, kinds in enumerate(rows):
            y = i * (len(rows) + 0.6) + j
            for kind in kinds:
                spans = shown[(shown.worker == w) & (shown.kind == kind)]
                ax.broken_barh(list(zip(spans.start_s, spans.end_s - spans.start_s)), (y - 0.4, 0.8),
                               facecolors=TIMELINE_COLORS[kind], alpha=0.6 if kind in ("send", "recv") else 0.9)
            labels.append((y, f"{rf.worker_label(w, n_workers, hosts)} {'/'.join(kinds)}"))
    ax.set_yticks([y for y, _ in labels], [text for _, text in labels], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlim(*window)
    left_out = len(all_workers) - len(workers)
    ax.set(xlabel="simulated time (s)", title=f"{policy}: timeline {window[0]:.3g} to {window[1]:.3g} s" +
           (f" (first {len(workers)} of {len(all_workers)} tracks)" if left_out > 0 else ""))
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in TIMELINE_COLORS.values()],
              labels=list(TIMELINE_COLORS), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    return fig


def world_changed(run, policy):
    """Whether workers left or rejoined the group, or work was thrown away, in this policy's run."""
    info = rf.summary(run, policy)
    if (info.get("workers_lost") or 0) > 0 or (info.get("workers_joined") or 0) > 0:
        return True
    return rf.table(run, policy, "events").kind.isin(["away", "join", "discard"]).any()


def availability(run, policy, max_labels=12):
    """The loss above, how many workers were in the group below, with joins (downloads of the state) and
    discarded work as spans. None where the world did not change (the line would be flat)."""
    if not world_changed(run, policy):
        return None
    steps = per_step(run, policy)
    metrics = rf.table(run, policy, "metrics")
    events = rf.table(run, policy, "events")
    info = rf.summary(run, policy)
    n_workers = info.get("workers") or rf.worker_count(run, policy)
    evals = steps.dropna(subset=["eval_loss"])
    aborted = steps.loc[steps.index.intersection(metrics[metrics.sync == "aborted"].step.unique())]
    group = rf.workers_available(run, policy)
    unit, scale = time_unit(info["wall_clock_s"])
    fig, (loss_ax, group_ax) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    loss_ax.plot(steps.time_s / scale, steps.train_loss, label="train")
    loss_ax.plot(evals.time_s / scale, evals.eval_loss, "o", label="eval")
    if not aborted.empty:
        loss_ax.plot(aborted.time_s / scale, aborted.train_loss, "x", color="tab:red", label="aborted sync")
    target_line(loss_ax, target_loss(run, [policy]))
    loss_ax.set(ylabel="loss", title=f"{policy}: loss and workers in the group")
    loss_ax.legend(fontsize="small")
    group_ax.step(group.time_s / scale, group.workers, where="post", color="black")
    for d in events[events.kind == "discard"].itertuples():
        group_ax.axvspan(d.start_s / scale, d.end_s / scale, facecolor="tab:red", alpha=0.2, hatch="//")
    joins = events[events.kind == "join"]
    for k, j in enumerate(joins.itertuples()):
        group_ax.axvspan(j.start_s / scale, j.end_s / scale, facecolor="tab:green", alpha=0.3)
        if k < max_labels:  # the donor: a worker's rank, the world size for the relay, or none (restored locally)
            donor = "restored locally" if pd.isna(j.peer) else \
                "from relay" if j.peer >= n_workers else f"from w{int(j.peer)}"
            group_ax.text(j.start_s / scale, 0.08 + 0.1 * (k % 3), f" w{j.worker} joins: {j.bytes / 1e6:.0f} MB {donor}",
                          transform=group_ax.get_xaxis_transform(), fontsize="x-small")
    group_ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=8))
    group_ax.set_ylim(0, n_workers * 1.08 + 0.2)
    group_ax.set(xlabel=f"simulated wall-clock ({unit})", ylabel="workers in the group")
    extra = f"; {len(joins) - max_labels} joins unlabelled" if len(joins) > max_labels else ""
    group_ax.legend(handles=[plt.Line2D([], [], color="black", label="workers in the group"),
                             Patch(facecolor="tab:green", alpha=0.3, label="join: download of the state" + extra),
                             Patch(facecolor="tab:red", alpha=0.2, hatch="//", label="discard: work thrown away")],
                    loc="lower right", fontsize="x-small")
    fig.tight_layout()
    return fig


# Which figures a run folder gets (locosim plot, locosim report --html).

def kind_of(run):
    """'run' (policy folders), 'sweep' (a grid with sweep keys), 'seeds' (a run at several seeds without
    a sweep); raises FileNotFoundError for a folder that is no run."""
    run = Path(run)
    if not run.is_dir():
        raise FileNotFoundError(f"{run}: no such folder")
    if not (run / "summary.csv").exists():
        raise FileNotFoundError(f"{run}: not a locosim run folder (no summary.csv in it); "
                                "a run folder is runs/<scenario>, a sweep point or a seed's folder")
    if rf.is_grid(run):
        return "sweep" if rf.sweep_keys(run) else "seeds"
    return "run"


def plan(run, policies=None):
    """[(name, caption, function)] for the figures of a run folder, in the order a page shows them; each
    function returns a Figure or None (nothing to show). policies: a subset of a plain run's."""
    run = Path(run)
    kind = kind_of(run)
    out = []
    if kind == "sweep":
        out.append(("sweep", "Sweep: compute utilization and wall-clock against the swept key", lambda: sweep(run)))
    if kind == "seeds" or (kind == "sweep" and rf.is_seeded(run)):
        out.append(("loss_bands", "Eval loss over seeds: mean and 95% band (log time)", lambda: loss_bands(run)))
        out.append(("final_eval_loss", "Final eval loss: mean over seeds ± 95% interval",
                    lambda: final_eval_loss(run)))
    if kind == "seeds":  # the details of the first seed
        first = rf.seed_runs(run).folder.iloc[0].parent
        out += [(name, f"{caption} ({first.name})", make) for name, caption, make in plan(first, policies)]
        return out
    if kind == "run":
        policies = policies or rf.policies(run)
        out += [
            ("loss_time", "Loss vs simulated wall-clock (log time axis; dashed: train.target_loss)",
             lambda: loss_time(run, policies)),
            ("loss_tokens", "Loss vs priced tokens, all workers", lambda: loss_tokens(run, policies)),
            ("utilization", "Compute utilization per accelerator type", lambda: utilization(run, policies)),
            ("traffic", "Bytes up and down per worker (log axis)", lambda: traffic(run, policies)),
        ]
        for p in policies:
            out.append((f"links_{p}", f"{p}: link utilization, WAN links first", lambda p=p: links(run, p)))
        for p in policies:
            out.append((f"timeline_{p}", f"{p}: timeline of one window", lambda p=p: timeline(run, p)))
        for p in policies:
            out.append((f"availability_{p}", f"{p}: workers in the group (the world changed)",
                        lambda p=p: availability(run, p)))
    return out
