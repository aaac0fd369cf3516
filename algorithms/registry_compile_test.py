#!/usr/bin/env python3
"""A policy registered without one of its traits, or listed without its factory, does not compile:
registry_entry_compiles.cpp is compiled with the flags the build uses for algorithms/policies.cpp or its
unity batch (compile_commands.json), once whole (it must compile: the check is not failing for another
reason), once without `reads_clock` (it must fail, naming the missing Required trait) and once without
make_example (it must fail, naming it).

  registry_compile_test.py BUILD_DIR
"""
import json
import shlex
import subprocess
import sys
from pathlib import Path

build = Path(sys.argv[1])
source = Path(__file__).resolve().parent / "registry_entry_compiles.cpp"
# In a unity build (the default) algorithms/ compiles as batches: any batch of the library has its flags.
entry = next(e for e in json.loads((build / "compile_commands.json").read_text())
             if e["file"].endswith("algorithms/policies.cpp") or "/locosim_algorithms.dir/Unity/" in e["file"])
args = shlex.split(entry["command"])
# The same flags, this file, syntax only: drop "-o <object>" and "-c <source>".
flags = []
skip = False
for a in args[1:]:
    if skip:
        skip = False
        continue
    if a in ("-o", "-c"):
        skip = True
        continue
    flags.append(a)


def compile_(*extra):
    return subprocess.run([args[0], *flags, *extra, "-fsyntax-only", str(source)], cwd=entry["directory"],
                          text=True, capture_output=True)


whole = compile_()
if whole.returncode != 0:
    sys.exit(f"registry_compile_test: the complete entry does not compile:\n{whole.stderr[-3000:]}")
missing = compile_("-DOMIT_TRAIT")
if missing.returncode == 0:
    sys.exit("registry_compile_test: an entry without reads_clock compiled")
if "Required" not in missing.stderr or "deleted" not in missing.stderr:
    sys.exit(f"registry_compile_test: failed, but not on the missing trait:\n{missing.stderr[-3000:]}")
first = next(l for l in missing.stderr.splitlines() if "error" in l)
print(f"registry_compile_test: ok; without reads_clock the compiler says:\n{first}")
unlisted = compile_("-DLIST_WITHOUT_FACTORY")
if unlisted.returncode == 0:
    sys.exit("registry_compile_test: a policy listed without make_example compiled")
if "make_example" not in unlisted.stderr:
    sys.exit(f"registry_compile_test: failed, but not on the missing factory:\n{unlisted.stderr[-3000:]}")
first = next(l for l in unlisted.stderr.splitlines() if "error" in l)
print(f"registry_compile_test: ok; listed without make_example the compiler says:\n{first}")
