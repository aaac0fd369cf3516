#!/usr/bin/python3
"""notebooks/runfolder.py's tables: each CSV parsed once while it is unchanged, every caller its own copy,
a file written again read again, and only the last few kept. Needs pandas (skipped, saying so, without
it, unless CI=true)."""
import os
import sys
import tempfile
import unittest
from pathlib import Path

try:
    import pandas as pd
except ImportError:
    if os.environ.get("CI") == "true":
        sys.exit("runfolder_test: pandas is missing (CI=true: `make test` installs python3-pandas)")
    print("skipped: pandas is missing")
    sys.exit(77)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runfolder as rf  # noqa: E402

EVENTS = "worker,kind,start_s,end_s,bytes,peer\n0,compute,0,1.5,0,\n0,send,1.5,2,100,1\n1,recv,1.5,2,100,-1\n"


class Tables(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.run = Path(self.dir.name)
        (self.run / "diloco").mkdir()
        (self.run / "diloco" / "events.csv").write_text(EVENTS)
        rf._TABLES.clear()
        self.parsed = 0
        real = pd.read_csv

        def counting(*args, **kwargs):
            self.parsed += 1
            return real(*args, **kwargs)
        rf.pd.read_csv = counting
        self.addCleanup(setattr, rf.pd, "read_csv", real)

    def test_a_table_is_parsed_once_and_each_caller_gets_its_own(self):
        first = rf.table(self.run, "diloco", "events")
        self.assertEqual(list(first["kind"]), ["compute", "send", "recv"])
        self.assertTrue(first["peer"].isna()[[0, 2]].all())  # none, and -1, read as NaN
        first.loc[0, "kind"] = "changed"
        first["extra"] = 1
        second = rf.table(self.run, "diloco", "events")
        self.assertEqual(self.parsed, 1)
        self.assertEqual(list(second["kind"]), ["compute", "send", "recv"])
        self.assertNotIn("extra", second)

    def test_a_file_written_again_is_read_again(self):
        rf.table(self.run, "diloco", "events")
        path = self.run / "diloco" / "events.csv"
        path.write_text(EVENTS + "1,wait,2,3,0,\n")
        stat = path.stat()  # a new size; and a new time, even where the clock is coarse
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        self.assertEqual(list(rf.table(self.run, "diloco", "events")["kind"]), ["compute", "send", "recv", "wait"])
        self.assertEqual(self.parsed, 2)

    def test_only_the_last_few_are_kept(self):
        for i in range(rf._TABLES_KEPT + 2):
            folder = self.run / f"p{i}"
            folder.mkdir()
            (folder / "events.csv").write_text(EVENTS)
            rf.table(self.run, f"p{i}", "events")
        self.assertEqual(len(rf._TABLES), rf._TABLES_KEPT)
        rf.table(self.run, f"p{rf._TABLES_KEPT + 1}", "events")  # the newest: kept
        self.assertEqual(self.parsed, rf._TABLES_KEPT + 2)
        rf.table(self.run, "p0", "events")  # the oldest: gone, parsed again
        self.assertEqual(self.parsed, rf._TABLES_KEPT + 3)


if __name__ == "__main__":
    unittest.main()
