"""What the figures of figures.py and sweep_figures.py share: line styles and colours by policy, the
target line, the time axis's unit, a run's title and a log axis's plain numbers."""
from pathlib import Path

from matplotlib.ticker import FuncFormatter

STYLES = ["-", "--", "-.", ":"]
PLAIN = FuncFormatter(lambda value, _: f"{value:g}")  # 0.01, 1, 100 on a log axis, not 10^-2


def time_unit(seconds):
    """(unit name, seconds per unit) for an axis that reaches `seconds`."""
    return ("h", 3600) if seconds > 3 * 3600 else ("min", 60) if seconds > 180 else ("s", 1)


def run_title(run):
    """'quickstart' for runs/quickstart, 'quickstart/seed=1' for a seed's or a sweep point's folder."""
    run = Path(run).resolve()
    return f"{run.parent.name}/{run.name}" if (run.parent / "summary.csv").exists() else run.name


def policy_colors(policies):
    return {p: f"C{i % 10}" for i, p in enumerate(policies)}


def line_style(i):
    return {"color": f"C{i % 10}", "linestyle": STYLES[(i // 10) % len(STYLES)]}


def target_line(ax, target):
    if target is not None:
        ax.axhline(target, color="black", linestyle="--", linewidth=1, label=f"target {target:g}")
