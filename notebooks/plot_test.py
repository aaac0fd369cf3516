#!/usr/bin/python3
"""ctest entries of `locosim plot` and `locosim report --html` (notebooks/CMakeLists.txt), on the small runs
the notebook tests make in the build folder.

  plot_test.py CASE LOCOSIM RUNS OUT
    figures    report-small: the expected PNGs (valid, not blank), no availability figure in a steady world;
               --format svg: valid SVGs, and the PNGs it wrote before removed (not a file it did not
               write); world-small: an availability figure per policy (figures.py's, drawn in-process)
    sweep      sweep-small: the sweep figure; seeds-small: written into RUN/figures by default; the sweep
               figure of a run that is no sweep: a message saying so
    not-a-run  exit 2 naming the folder (plot and report --html); without matplotlib: exit 1, saying what to do
    html       report-small: one page, no http(s) reference, the table as `locosim report` prints it, every
               figure a valid embedded PNG; opened in headless Chromium: no console message, a screenshot
               that is not blank
Exit 0 passed, 1 failed, 77 skipped (matplotlib or Chromium missing, and CI is not "true").
"""
import base64
import html
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SKIP = 77
HERE = Path(__file__).resolve().parent
CI = os.environ.get("CI") == "true"


def skip_or_fail(why):
    if CI:
        fail(f"{why} (CI=true: `make test` installs it with scripts/install-deps.sh)")
    print(f"skipped: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def check(condition, why):
    if not condition:
        fail(why)


try:
    import numpy as np
    from PIL import Image
except ImportError as e:
    skip_or_fail(f"the system Python has no matplotlib/PIL ({e})")

sys.path.insert(0, str(HERE))

STEADY = ["loss_time", "loss_tokens", "utilization", "traffic", "links_ddp", "links_diloco", "timeline_ddp",
          "timeline_diloco"]


def run(*command, expect=0):
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=120)
    print("$", " ".join(str(c) for c in command), f"-> exit {done.returncode}")
    sys.stdout.write(done.stdout)
    sys.stdout.write(done.stderr)
    check(done.returncode == expect, f"exit {done.returncode}, expected {expect}")
    return done


def not_blank(image, what):
    """An RGB image with content: a fair share of non-white pixels and many colours."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    inked = (pixels.min(axis=2) < 235).mean()
    colours = len(np.unique(pixels[::3, ::3].reshape(-1, 3), axis=0))
    print(f"{what}: {image.size[0]}x{image.size[1]}, {inked:.1%} inked, {colours} colours")
    check(inked > 0.03 and colours > 50, f"{what} looks blank ({inked:.1%} inked, {colours} colours)")


def valid_png(data, what):
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{what} is not a PNG")
    image = Image.open(io.BytesIO(data))
    image.load()
    check(image.size[0] > 200 and image.size[1] > 150, f"{what} is {image.size}")
    not_blank(image, what)


def written(done):
    """The paths a plot printed, as names."""
    paths = [Path(line) for line in done.stdout.split("\n") if line]
    for p in paths:
        check(p.is_file() and p.stat().st_size > 0, f"{p} printed but missing or empty")
    return paths


def case_figures(locosim, runs, out):
    steady, world = runs / "report-small", runs / "world-small"
    shutil.rmtree(out, ignore_errors=True)
    pngs = written(run(locosim, "plot", steady, "-o", out))
    check([p.name for p in pngs] == [f"{n}.png" for n in STEADY],
          f"plot wrote {[p.name for p in pngs]}, expected {STEADY} as PNG (no availability in a steady world)")
    for p in pngs:
        valid_png(p.read_bytes(), p.name)
    (out / "mine.txt").write_text("not the plot's\n")
    svgs = written(run(locosim, "plot", steady, "-o", out, "--format", "svg"))
    check([p.name for p in svgs] == [f"{n}.svg" for n in STEADY], f"plot --format svg wrote {[p.name for p in svgs]}")
    for p in svgs:
        root = ET.parse(p).getroot()
        check(root.tag.endswith("svg") and len(list(root.iter())) > 50, f"{p.name} is not an SVG with content")
    left = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    check(left == sorted([p.name for p in svgs] + ["mine.txt"]),
          f"after the SVGs the folder holds {left}: the earlier PNGs should be gone, mine.txt kept")
    import figures  # world-small's availability figures, drawn here: a second `locosim plot` would double the time
    # A homogeneous swarm's mean utilization, summed over thousands of workers, can land a rounding
    # error below its least worker's or above its most used one's (4096 workers through a relay did):
    # the whiskers must stay drawable.
    rounded = out.parent / f"{out.name}-rounded-run"
    shutil.rmtree(rounded, ignore_errors=True)
    shutil.copytree(steady, rounded)
    for path in rounded.glob("*/summary.json"):
        summary = json.loads(path.read_text())
        u = summary["compute_utilization"]
        summary["utilization_min"], summary["utilization_max"] = math.nextafter(u, 1), math.nextafter(u, 0)
        for group in summary.get("utilization_by_accelerator") or []:
            group["min"], group["max"] = math.nextafter(group["mean"], 1), math.nextafter(group["mean"], 0)
        path.write_text(json.dumps(summary))
    data = io.BytesIO()
    figures.utilization(rounded).savefig(data, format="png", dpi=80)
    valid_png(data.getvalue(), "utilization with the mean a rounding error outside [least, most]")
    shutil.rmtree(rounded)
    names = [name for name, _, _ in figures.plan(world)]
    check("availability_ddp" in names and "availability_diloco" in names, f"world-small's figures: {names}")
    for policy in ["ddp", "diloco"]:
        fig = figures.availability(world, policy)
        check(fig is not None, f"world-small (hosts fail and come back): no availability figure for {policy}")
        data = io.BytesIO()
        fig.savefig(data, format="png", dpi=80)
        valid_png(data.getvalue(), f"world-small availability_{policy}")


def case_sweep(locosim, runs, out):
    shutil.rmtree(out, ignore_errors=True)
    sweep = written(run(locosim, "plot", runs / "sweep-small", "-o", out))
    check([p.name for p in sweep] == ["sweep.png"], f"sweep-small: {[p.name for p in sweep]}, expected sweep.png")
    valid_png(sweep[0].read_bytes(), "sweep.png")
    seeds = runs / "seeds-small"
    paths = written(run(locosim, "plot", seeds))
    names = [p.name for p in paths]
    check(all(p.parent == seeds / "figures" for p in paths), "plot without -o should write into RUN/figures")
    for expected in ["loss_bands.png", "final_eval_loss.png", "loss_time.png"]:
        check(expected in names, f"seeds-small: no {expected} among {names}")
    import figures
    try:
        figures.sweep(runs / "report-small")
        fail("the sweep figure of report-small (no sweep) did not refuse")
    except figures.NotASweep as e:
        print("NotASweep:", e)
        check("is not a sweep" in str(e) and "report-small" in str(e), f"unclear message: {e}")


def case_not_a_run(locosim, runs, out):
    shutil.rmtree(out, ignore_errors=True)
    empty, other = out / "empty", out / "other"
    empty.mkdir(parents=True)
    other.mkdir()
    (other / "notes.csv").write_text("a,b\n1,2\n")
    for command in [("plot", empty), ("plot", out / "missing", "-o", out), ("report", other, "--html")]:
        done = run(locosim, *command, expect=2)
        check(str(command[1]) in done.stderr, f"the message does not name {command[1]}: {done.stderr!r}")
    check(not (other / "figures").exists() and not (other / "report.html").exists(), "wrote into a non-run folder")
    done = run("/usr/bin/python3", "-S", HERE.parent / "scripts" / "plot_run.py", "plot", runs / "report-small",
               "-o", out / "none", expect=1)  # -S: no site packages, as without matplotlib
    check("matplotlib" in done.stderr and "scripts/install-deps.sh" in done.stderr,
          f"no clear message without matplotlib: {done.stderr!r}")


def case_html(locosim, runs, out):
    steady = runs / "report-small"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    page = out / "page.html"
    done = run(locosim, "report", steady, "--html", "-o", page)
    check(done.stdout.strip() == str(page), f"printed {done.stdout!r}, expected the page's path")
    text = page.read_text()
    check(not re.search(r"https?://", text, re.I), "the page has http(s) references: it must load nothing")
    table = run(locosim, "report", steady).stdout
    shown = re.search(r'<pre class="report-table">(.*?)</pre>', text, re.S)
    check(shown is not None and html.unescape(shown.group(1)) == table,
          "the page does not hold the table `locosim report` prints")
    sources = re.findall(r'<img [^>]*src="([^"]*)"', text)
    check(len(sources) == len(STEADY), f"{len(sources)} figures on the page, expected {len(STEADY)}")
    for i, src in enumerate(sources):
        check(src.startswith("data:image/png;base64,"), f"figure {i} is not an embedded PNG: {src[:40]}")
        valid_png(base64.b64decode(src.split(",", 1)[1]), f"embedded figure {i}")

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        skip_or_fail("chromium not installed")
    shot = out / "screenshot.png"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}",
                               "--enable-logging=stderr", "--v=0", f"--screenshot={shot}", "--window-size=1200,2000",
                               page.resolve().as_uri()], capture_output=True, text=True, timeout=90)
    print(f"chromium -> exit {done.returncode}")
    console = [line for line in done.stderr.split("\n") if ":CONSOLE" in line or "Uncaught" in line]
    check(done.returncode == 0 and shot.is_file(), f"chromium failed: {done.stderr[-2000:]}")
    check(not console, "console messages:\n" + "\n".join(console))
    not_blank(Image.open(shot), "the screenshot")


def main():
    case, locosim, runs, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    {"figures": case_figures, "sweep": case_sweep, "not-a-run": case_not_a_run, "html": case_html}[case](
        locosim, runs, out)
    print("ok")


if __name__ == "__main__":
    main()
