#!/usr/bin/env python3
"""Regenerates the results printed in README.md: every block between
    <!-- results: ID -->
    <!-- /results -->
is replaced by `$ build/locosim <args>` and what that command prints (progress lines, the pre-run note
and "finished earlier" lines left out: they depend on the machine and on what ran before). The runs
go to runs/ as a user's would; runs already there are reused (results are deterministic).

  python3 scripts/readme_results.py [--build build] [--only ID ...] [--list]
  python3 scripts/readme_results.py --check ID --out DIR   # exit 1 and a diff if README's block is stale

Nothing in the README's results is typed by hand: change a scenario, run this, commit the diff.
--check runs the block's command into DIR instead of runs/ (the test suite pins the demo's table so).
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# ID: the command's arguments after `locosim`. Several seeds wherever a loss is compared.
BLOCKS = {
    "demo": ["run", "scenarios/quickstart.yaml"],
    "quickstart-seeds": ["run", "scenarios/quickstart.yaml", "--seeds", "3"],
    "volunteers-churn": ["run", "scenarios/volunteers-churn.yaml", "--seeds", "3"],
    "mixed-gpus": ["run", "scenarios/mixed-gpus.yaml", "--seeds", "3"],
    "tuned-diloco": ["run", "scenarios/tuned-diloco.yaml"],
    "two-labs": ["run", "scenarios/two-labs.yaml"],
    "compare-all": ["run", "scenarios/compare-all.yaml", "--seeds", "3"],
}

LEFT_OUT = re.compile(r"^(\[\d+/\d+\] |note: |estimate: |\d+ of \d+ runs finished earlier)")


def output_of(build, args, out=None):
    """The block's text: the command and what it prints. With `out`, the runs go there (`-o out`) and
    the run folder line names runs/ as it would without."""
    extra = ["-o", str(out)] if out else []
    done = subprocess.run([str(Path(build) / "locosim"), *args, *extra, "--no-progress"], cwd=REPO, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "CI": "true"})
    if done.returncode != 0:
        sys.exit(f"readme_results: `locosim {' '.join(args)}` failed (exit {done.returncode}):\n{done.stdout}")
    lines = [l.rstrip() for l in done.stdout.splitlines() if not LEFT_OUT.match(l)]
    if out:
        lines = [re.sub(r"^(run folders?: )" + re.escape(str(out)), r"\1runs", l) for l in lines]
    return "\n".join(["$ build/locosim " + " ".join(args), *lines]).rstrip() + "\n"


def block_pattern(key):
    return re.compile(r"(<!-- results: %s -->\n```\n)(.*?)(```\n<!-- /results -->)" % re.escape(key), re.S)


def check(options):
    """Exit 0 when README's block equals what the code prints now, else 1 with a unified diff."""
    if options.check not in BLOCKS:
        sys.exit(f"readme_results: no block '{options.check}' (blocks: {', '.join(BLOCKS)})")
    found = block_pattern(options.check).search((REPO / "README.md").read_text())
    if not found:
        sys.exit(f"readme_results: README.md has no block <!-- results: {options.check} -->")
    with tempfile.TemporaryDirectory(prefix="readme-check-") as scratch:
        text = output_of(options.build, BLOCKS[options.check], Path(options.out or scratch).resolve())
    if text == found.group(2):
        print(f"readme_results: README's {options.check} block is what the code prints")
        return 0
    diff = difflib.unified_diff(found.group(2).splitlines(True), text.splitlines(True),
                                "README.md (" + options.check + ")", "printed now")
    sys.stdout.write("".join(diff))
    print(f"readme_results: README's {options.check} block is stale: run python3 scripts/readme_results.py "
          f"--only {options.check}")
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="the build folder (default: build)")
    parser.add_argument("--only", nargs="*", default=None, help="regenerate only these blocks")
    parser.add_argument("--list", action="store_true", help="list the blocks and their commands")
    parser.add_argument("--check", metavar="ID", help="compare README's block ID with a fresh run; change nothing")
    parser.add_argument("--out", metavar="DIR", help="with --check: the run folder's parent (default: a temp folder)")
    options = parser.parse_args()
    if options.check:
        return check(options)
    if options.list:
        for key, args in BLOCKS.items():
            print(f"{key}: locosim {' '.join(args)}")
        return
    readme = (REPO / "README.md").read_text()
    wanted = options.only if options.only is not None else list(BLOCKS)
    for key in wanted:
        if key not in BLOCKS:
            sys.exit(f"readme_results: no block '{key}' (blocks: {', '.join(BLOCKS)})")
        pattern = block_pattern(key)
        if not pattern.search(readme):
            sys.exit(f"readme_results: README.md has no block <!-- results: {key} -->")
        text = output_of(options.build, BLOCKS[key])
        readme = pattern.sub(lambda m: m.group(1) + text + m.group(3), readme)
        print(f"readme_results: {key} regenerated", flush=True)
    (REPO / "README.md").write_text(readme)


if __name__ == "__main__":
    sys.exit(main())
