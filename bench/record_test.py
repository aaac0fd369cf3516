#!/usr/bin/env python3
"""bench/record.py: a bench log's figures and verdicts land in the README's block, and only there."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import record  # noqa: E402

MACHINE = "machine commit=b22c5aa date=2026-11-28 cores=2 memory_gib=23.4 cpu=Intel(R) Xeon(R) Processor @ 2.90GHz"
SCALE = """\
scale workers=256 collective=relay rounds=100 inner_steps=5 wall_s=1.07 cpu_s=1.07 peak_mib=193 simulated_s=26966.8 per_worker_round_us=41.7 more_rounds=800 more_wall_s=4.86 marginal_us=18.5 marginal_cpu_us=19.3 repeats=3
scale workers=4096 collective=relay rounds=100 inner_steps=5 wall_s=14.70 cpu_s=15.04 peak_mib=685 simulated_s=34397.2 per_worker_round_us=35.9 more_rounds=50 more_wall_s=24.26 marginal_us=46.7 marginal_cpu_us=47.7 repeats=3
scale_ratio collective=relay workers=4096/256 marginal_ratio=2.52 printed_ratio=0.86 marginal_cpu_ratio=2.47
scale workers=4096 collective=ring rounds=100 inner_steps=5 wall_s=9.92 cpu_s=10.1 peak_mib=638 simulated_s=73121.6 per_worker_round_us=26.7 more_rounds=50 more_wall_s=14.76 marginal_us=18.8 marginal_cpu_us=19.6 repeats=3
scale_ratio collective=ring workers=4096/256 marginal_ratio=1.20 printed_ratio=0.82 marginal_cpu_ratio=1.51
overhead workers=4 steps=100 wall_s=35.14 torch_s=34.88 ratio=1.007
pool workers=4 one_thread_s=35.14 threads=2 pooled_s=17.93 speedup=1.96"""
PEER = ("peer workers=4 steps=100 threads=2 locosim_steps_per_s=22.9 (intra_op=16.0 step_pool=22.9) "
        "python_steps_per_s=7.3 ratio={} locosim_eval_loss=2.523")
SWARM = "swarm scenario=swarm-10k workers=10000 rounds=100 wall_s=49.42 cpu_s=48.90 peak_mib=1460 simulated_s=48575.1 repeats=1"
PAGE = "# Benchmarks\n\nintro\n\n{}\n<!-- bench: latest -->\nold figures\n<!-- /bench -->\n\n## History\nkept\n"


def log(*parts):
    return "\n".join([MACHINE, *parts]) + "\n"


class Record(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.log = pathlib.Path(self.dir.name) / "bench.txt"
        self.readme = pathlib.Path(self.dir.name) / "README.md"
        self.readme.write_text(PAGE.format("top"))

    def write(self, text):
        self.log.write_text(text)
        return subprocess.run([sys.executable, str(HERE / "record.py"), "write", str(self.log), "--readme",
                               str(self.readme)], capture_output=True, text=True)

    def rows(self):
        """The written table: {target: (measured, verdict)}."""
        table = {}
        for line in self.readme.read_text().splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if line.startswith("| ") and len(cells) == 3 and cells[0] != "target":
                table[cells[0]] = (cells[1], cells[2])
        return table

    def row(self, start):
        found = [v for k, v in self.rows().items() if k.startswith(start)]
        self.assertEqual(len(found), 1, f"one row starting {start!r} in {self.rows()}")
        return found[0]

    def test_figures_and_verdicts_replace_the_block_and_nothing_else(self):
        result = self.write(log(SCALE, PEER.format("3.13"), SWARM))
        self.assertEqual(result.returncode, 0, result.stderr)
        page = self.readme.read_text()
        self.assertTrue(page.startswith("# Benchmarks\n\nintro\n\ntop\n<!-- bench: latest -->\n"))
        self.assertTrue(page.endswith("<!-- /bench -->\n\n## History\nkept\n"))
        self.assertNotIn("old figures", page)
        self.assertIn("at commit b22c5aa on 2026-11-28: Intel(R) Xeon(R) Processor @ 2.90GHz, 2 cores, 23.4 GiB", page)
        for line in (SCALE + "\n" + SWARM).splitlines():
            self.assertIn(line + "\n", page)  # the log's lines as printed
        self.assertEqual(self.row("4096 workers x 100 rounds, ring: ≤ 10 s"), ("9.92 s", "met"))
        self.assertEqual(self.row("4096 workers x 100 rounds, relay: ≤ 10 s"),
                         ("14.70 s", "**not met**: 1.47x the limit"))
        self.assertEqual(self.row("4096 workers x 100 rounds, relay: ≤ 1024 MiB"), ("685 MiB", "met"))
        self.assertEqual(self.row("cost of a worker-round, largest / smallest workers, ring")[1], "met")
        self.assertEqual(self.row("cost of a worker-round, largest / smallest workers, relay")[1],
                         "**not met**: 2.02x the limit")
        self.assertEqual(self.row("scenarios/swarm-10k.yaml at 100 rounds"),
                         ("49.42 s, 1460 MiB", "**not met**: 1.65x the limit"))
        self.assertEqual(self.row("a full run's wall time")[1], "met")
        self.assertEqual(self.row("the step pool")[1], "met")
        self.assertEqual(self.row("locosim over the Python DiLoCo loop"), ("3.13", "not settled: 1 of 3 runs"))

    def test_writing_twice_gives_the_same_page(self):
        text = log(SCALE, PEER.format("3.13"))
        self.write(text)
        once = self.readme.read_text()
        self.write(text)
        self.assertEqual(self.readme.read_text(), once)

    def test_the_peer_target_needs_every_run_of_three(self):
        self.write(log(SCALE, *[PEER.format(r) for r in ("1.62", "1.55", "1.51")]))
        self.assertEqual(self.row("locosim over the Python DiLoCo loop"), ("1.62, 1.55, 1.51", "met"))
        self.write(log(SCALE, *[PEER.format(r) for r in ("1.62", "1.28", "1.62")]))
        self.assertEqual(self.row("locosim over the Python DiLoCo loop"),
                         ("1.62, 1.28, 1.62", "**not met**: 0.85x the floor"))

    def test_the_native_kernels_ratio_is_shown_beside_the_target_not_judged(self):
        native = PEER.replace(" locosim_eval_loss", " native_steps_per_s=33.0 (native_intra_op=20.1 "
                              "native_step_pool=33.0) native_ratio={} locosim_eval_loss")
        self.write(log(SCALE, *[native.format(r, n) for r, n in (("1.38", "1.73"), ("1.45", "1.70"), ("1.45", "1.52"))]))
        self.assertEqual(self.row("locosim over the Python DiLoCo loop"),
                         ("1.38, 1.45, 1.45", "**not met**: 0.92x the floor"))
        self.assertEqual(self.row("the same, locosim on this CPU's native kernels"),
                         ("1.73, 1.70, 1.52", "for comparison: all ≥ 1.5x"))
        self.write(log(SCALE, native.format("1.62", "1.20")))
        self.assertEqual(self.row("the same, locosim on this CPU's native kernels"),
                         ("1.20", "for comparison: 0.80x the floor at the lowest"))
        self.write(log(SCALE, PEER.format("1.62")))  # a log from before native_ratio was measured
        self.assertEqual(self.row("the same, locosim on this CPU's native kernels"),
                         ("not in the log", "for comparison: not measured"))

    def test_the_engine_floor_is_shown_beside_the_cost_ratios_not_judged(self):
        floor = ("floor workers=4096 rounds=100 inner_steps=5 wall_s=4.06 cpu_s=4.04 peak_mib=279 simulated_s=34334.4 "
                 "per_worker_round_us=9.9 more_rounds=50 more_wall_s=6.02 marginal_us=9.5 marginal_cpu_us=9.6 repeats=3\n"
                 "floor_ratio workers=4096/256 marginal_ratio={} printed_ratio=1.86 marginal_cpu_ratio=2.41")
        self.write(log(SCALE, floor.format("2.42")))
        self.assertIn(floor.format("2.42") + "\n", self.readme.read_text())
        self.assertEqual(self.row("the same, the simulation engine alone"),
                         ("2.42 (workers 4096/256; from CPU time 2.41)", "for comparison: above the 1.25 limit"))
        self.assertEqual(self.row("cost of a worker-round, largest / smallest workers, relay")[1],
                         "**not met**: 2.02x the limit")  # locosim's own ratio is still the target
        self.write(log(SCALE, floor.format("1.10")))
        self.assertEqual(self.row("the same, the simulation engine alone")[1], "for comparison: within the 1.25 limit")
        self.write(log(SCALE))  # a log from before the floor was measured
        self.assertEqual(self.row("the same, the simulation engine alone"),
                         ("not in the log", "for comparison: not measured"))

    def test_a_figure_not_in_the_log_is_not_measured(self):
        result = self.write(log(SCALE.splitlines()[0], "peer skipped: no Python DiLoCo loop at x"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("peer skipped: no Python DiLoCo loop at x\n", self.readme.read_text())
        self.assertEqual(self.row("4096 workers x 100 rounds, relay: ≤ 10 s"), ("not in the log", "not measured"))
        self.assertEqual(self.row("4096 workers x 100 rounds, relay: ≤ 1024 MiB"), ("not in the log", "not measured"))
        self.assertEqual(self.row("scenarios/swarm-10k.yaml"), ("not in the log", "not measured"))
        self.assertEqual(self.row("locosim over the Python DiLoCo loop")[1], "not measured")

    def test_bad_input_is_refused_with_exit_2_and_the_page_untouched(self):
        cases = [
            (SCALE + "\n", "bench.txt: no `machine` line"),
            (MACHINE + "\nnothing here\n", "bench.txt: no benchmark line"),
            (log(SCALE.replace("wall_s=14.70", "wall_s=fast")), "bench.txt: `wall_s=` is missing or not a number"),
        ]
        for text, message in cases:
            with self.subTest(message=message):
                result = self.write(text)
                self.assertEqual(result.returncode, 2)
                self.assertIn(message, result.stderr)
                self.assertEqual(self.readme.read_text(), PAGE.format("top"))
        self.readme.write_text("# Benchmarks\nno block\n")
        result = self.write(log(SCALE))
        self.assertEqual(result.returncode, 2)
        self.assertIn("README.md: no `<!-- bench: latest -->` ... `<!-- /bench -->` block", result.stderr)
        self.assertEqual(self.readme.read_text(), "# Benchmarks\nno block\n")

    def test_the_machine_line_is_one_a_log_can_start_with(self):
        line = subprocess.run([sys.executable, str(HERE / "record.py"), "machine"], capture_output=True,
                              text=True, check=True).stdout.strip()
        machine, _ = record.parse(line + "\n" + SCALE, "log")
        self.assertEqual(set(machine), {"commit", "date", "cores", "memory_gib", "cpu"})
        self.assertRegex(machine["date"], r"^\d{4}-\d\d-\d\d$")
        self.assertGreaterEqual(int(machine["cores"]), 1)

    def test_the_projects_bench_readme_has_one_block_to_write_into(self):
        page = (HERE / "README.md").read_text()
        self.assertEqual((page.count(record.BEGIN), page.count(record.END)), (1, 1))
        self.assertLess(page.index(record.BEGIN), page.index(record.END))


if __name__ == "__main__":
    unittest.main()
