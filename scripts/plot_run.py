#!/usr/bin/python3
"""Figures and a self-contained HTML page of a finished locosim run, with Debian's matplotlib.

  plot_run.py plot RUN [-o DIR] [--format png|svg]     the figures, into RUN/figures by default
  plot_run.py html RUN [-o FILE] [--locosim PATH]      one page, RUN/report.html by default

`locosim plot` and `locosim report --html` start this script with /usr/bin/python3. The figures are
notebooks/figures.py's, which the notebooks draw too. RUN is runs/<scenario>, a sweep point, a seed's
folder or a policy folder (then only that policy). The page embeds the comparison table (`locosim report`)
and every figure as a base64 PNG: it loads nothing, so it opens offline and can be mailed as one file.
Each prints what it wrote, a path per line. Exit codes: 0 written, 1 plotting failed (or matplotlib
missing), 2 RUN is not a run folder.
"""
import argparse
import base64
import html
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "notebooks"))


def is_run(folder):
    """runs/<scenario>, a sweep point or a seed's folder (summary.csv), or a policy folder in one."""
    return (folder / "summary.csv").is_file() or ((folder / "summary.json").is_file()
                                                  and (folder.parent / "summary.csv").is_file())


def refuse_non_run(argv):
    """Exit 2, naming the folder, for a RUN that is no run folder: before the slow imports."""
    for i, arg in enumerate(argv[:-1]):
        if arg in ("plot", "html") and not argv[i + 1].startswith("-") and not is_run(Path(argv[i + 1])):
            folder = Path(argv[i + 1])
            why = "no such folder" if not folder.is_dir() else "not a locosim run folder (no summary.csv in it)"
            print(f"error: {folder}: {why}; a run folder is runs/<scenario>, a sweep point, a seed's or a "
                  "policy folder", file=sys.stderr)
            sys.exit(2)
        if arg in ("plot", "html"):
            return


if __name__ == "__main__":
    refuse_non_run(sys.argv[1:])

try:
    import matplotlib  # noqa: F401
    import pandas as pd
except ImportError as e:
    sys.exit(f"error: plotting needs matplotlib and pandas for {sys.executable} ({e}): run scripts/install-deps.sh")

import figures  # noqa: E402


def run_and_policies(folder):
    """(run folder, policies or None for all): a policy folder (summary.json, no summary.csv) is its
    parent's run restricted to it. Exits 2, naming the folder, for anything else that is no run."""
    folder = Path(folder)
    if not (folder / "summary.csv").exists() and is_run(folder):
        return folder.parent, [folder.name]
    try:
        figures.kind_of(folder)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    return folder, None


def draw(run, policies):
    """Yields (name, caption, figure) for every figure the run has (None-returning ones left out)."""
    for name, caption, make in figures.plan(run, policies):
        fig = make()
        if fig is not None:
            yield name, caption, fig


def plot(args):
    run, policies = run_and_policies(args.run)
    writer = figures.FigureWriter(args.output or Path(args.run) / "figures", "locosim-plot")
    for name, _, fig in draw(run, policies):
        print(writer.save(fig, name, args.format))


def report_table(run, locosim):
    """The comparison table as `locosim report RUN` prints it, or None (with a line saying why)."""
    if locosim is None:
        built = REPO / "build" / "locosim"
        locosim = str(built) if built.exists() else shutil.which("locosim")
    if not locosim:
        print("note: no locosim program found (--locosim PATH): the page has summary.csv only", file=sys.stderr)
        return None
    done = subprocess.run([locosim, "report", str(run)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        sys.exit(done.returncode)
    return done.stdout


STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; padding: 0 1em; max-width: 1200px; color: #222; background: #fff; }
.wide { overflow-x: auto; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.8em; overflow-x: auto; font-size: 13px; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-weight: bold; margin-bottom: 0.3em; }
table { border-collapse: collapse; font-size: 12px; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
nav a { margin-right: 1em; }
"""


def page(run, policies, table):
    title = f"locosim report: {Path(run).resolve().name}" + (f" ({', '.join(policies)})" if policies else "")
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
             f"<p>Run folder: <code>{html.escape(str(Path(run).resolve()))}</code></p>"]
    shown = []
    body = []
    for name, caption, fig in draw(run, policies):
        data = io.BytesIO()
        fig.savefig(data, format="png", dpi=100)
        figures.plt.close(fig)
        encoded = base64.b64encode(data.getvalue()).decode("ascii")
        body.append(f"<figure id=\"{name}\"><figcaption>{html.escape(caption)}</figcaption>"
                    f"<img alt=\"{html.escape(caption)}\" src=\"data:image/png;base64,{encoded}\"></figure>")
        shown.append(name)
    parts.append("<nav>" + "".join(f"<a href=\"#{n}\">{n}</a>" for n in ["table"] + shown) + "</nav>")
    parts.append("<h2 id=\"table\">Comparison table</h2>")
    if table is not None:
        parts.append(f"<pre class=\"report-table\">{html.escape(table)}</pre>")
    summary = pd.read_csv(Path(run) / "summary.csv")
    if policies:
        summary = summary[summary.label.isin(policies)]
    parts.append("<details><summary>summary.csv</summary><div class=\"wide\">" +
                 summary.to_html(index=False, na_rep="") + "</div></details>")
    parts.append("<h2>Figures</h2>")
    parts += body
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html(args):
    run, policies = run_and_policies(args.run)
    table = report_table(args.run, args.locosim)
    out = Path(args.output) if args.output else Path(args.run) / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    staged.write_text(page(run, policies, table), encoding="utf-8")
    staged.replace(out)
    print(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    plot_args = modes.add_parser("plot", help="the figures as files")
    plot_args.add_argument("run")
    plot_args.add_argument("-o", "--output", help="folder for the figures (default: RUN/figures)")
    plot_args.add_argument("--format", choices=["png", "svg"], default="png")
    html_args = modes.add_parser("html", help="one self-contained HTML page")
    html_args.add_argument("run")
    html_args.add_argument("-o", "--output", help="the page (default: RUN/report.html)")
    html_args.add_argument("--locosim", help="the locosim program that prints the table (default: build/locosim)")
    args = parser.parse_args()
    (plot if args.mode == "plot" else write_html)(args)


if __name__ == "__main__":
    main()
