// Resumable and split sweeps: a finished run is known by its scenario hash, so a killed sweep
// computes only what is missing when run again, shards run apart and merge into the same summary.csv,
// and the SLURM job array lists only the runs still to compute.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "report/resume.hpp"
#include "cli/estimate.hpp"
#include "cli/run.hpp"
#include "cli/slurm.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// The CLI tests' small scenario (2 workers, ddp and diloco, 12 steps) over a 3 x 2 grid: 12 runs.
std::string sweep_yaml() {
  return small_scenario_yaml() +
         "sweep:\n"
         "  platform.hosts[*].uplink.bandwidth: [5 Mbps, 20 Mbps, 80 Mbps]\n"
         "  policies[diloco].inner_steps: [2, 4]\n";
}

std::string sweep_dir(const std::string& name) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 30000);
  write_file(dir + "/s.yaml", sweep_yaml());
  return dir;
}

// Finished run folders (summary.json in place) under runs/small/<point>/<policy>.
int finished_runs(const fs::path& root) {
  int n = 0;
  if (!fs::is_directory(root)) return 0;
  for (const auto& point : fs::directory_iterator(root)) {
    if (!point.is_directory() || point.path().filename().string()[0] == '.') continue;
    for (const auto& run : fs::directory_iterator(point.path())) {
      if (run.path().filename().string()[0] != '.' && fs::exists(run.path() / "summary.json")) ++n;
    }
  }
  return n;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// "K of N runs finished earlier" -> K (0 when the line is absent).
int skipped(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("(\\d+) of \\d+ runs finished earlier")) ? std::stoi(m[1]) : 0;
}

std::vector<std::string> hashes(const std::string& file) {
  const Sweep sweep = load_sweep(file);
  std::vector<std::string> out;
  for (const PlannedRun& r : plan_runs(sweep, RunOptions{})) out.push_back(r.hash);
  return out;
}

}  // namespace

TEST_CASE("resume: a sweep killed half-way computes only its missing runs, and ends as an uninterrupted one") {
  const std::string dir = sweep_dir("resume-kill");
  CliResult whole = run_locosim("run s.yaml -o whole -j 2", dir);
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);
  CHECK(count(whole.out, " simulated in ") == 12);
  CHECK(skipped(whole.out) == 0);

  // One run at a time; the whole process group is killed (as a lost machine would leave it) once
  // four runs are finished.
  const std::string bin = std::string(std::getenv("LOCOSIM_BIN")) + "/locosim";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    if (chdir(dir.c_str()) != 0) _exit(127);
    freopen("/dev/null", "w", stdout);
    execl(bin.c_str(), bin.c_str(), "run", "s.yaml", "-o", "killed", "-j", "1", nullptr);
    _exit(127);
  }
  setpgid(pid, pid);
  const fs::path killed = fs::path(dir) / "killed" / "small";
  int status = 0;
  bool exited = false;
  while (finished_runs(killed) < 4 && !(exited = waitpid(pid, &status, WNOHANG) == pid)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_MESSAGE(!exited, "the sweep ended before it could be killed");
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the killed group's last process is gone
  const int done = finished_runs(killed);
  REQUIRE(done >= 4);
  REQUIRE(done < 12);

  CliResult again = run_locosim("run s.yaml -o killed -j 2", dir);
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  CHECK(skipped(again.out) == done);
  CHECK(count(again.out, " simulated in ") == static_cast<size_t>(12 - done));
  CHECK(read_file(dir + "/killed/small/summary.csv") == read_file(dir + "/whole/small/summary.csv"));
  for (const auto& point : fs::directory_iterator(killed)) {  // the killed run's temporary folder is gone
    CHECK_MESSAGE(point.path().filename().string().find(".tmp.") == std::string::npos, point.path());
    if (!point.is_directory()) continue;
    for (const auto& run : fs::directory_iterator(point.path())) {
      CHECK_MESSAGE(run.path().filename().string().find(".tmp.") == std::string::npos, run.path());
    }
  }

  CliResult third = run_locosim("run s.yaml -o killed -j 2", dir);  // nothing left to compute
  CHECK(skipped(third.out) == 12);
  CHECK(count(third.out, " simulated in ") == 0);
  CliResult forced = run_locosim("run s.yaml -o killed -j 2 --force -p diloco", dir);
  CHECK(count(forced.out, " simulated in ") == 6);
  CHECK(read_file(dir + "/killed/small/summary.csv") == read_file(dir + "/whole/small/summary.csv"));
}

TEST_CASE("resume: shards run apart and merged give the whole sweep's summary.csv, and merge names what is missing") {
  const std::string dir = sweep_dir("resume-shards");
  REQUIRE(run_locosim("run s.yaml -o whole -j 2", dir).exit_code == 0);

  std::vector<std::string> seen;  // the shards' runs: disjoint, and all of them together
  for (int i = 0; i < 5; ++i) {
    RunOptions options;
    options.shard = {i, 5};
    for (const PlannedRun& r : plan_runs(load_sweep(dir + "/s.yaml"), options)) seen.push_back(r.name);
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen.size() == 12);
  CHECK(std::unique(seen.begin(), seen.end()) == seen.end());

  for (int i : {0, 3, 1}) {
    CliResult shard = run_locosim("run s.yaml -o split --shard " + std::to_string(i) + "/4 -j 2", dir);
    REQUIRE_MESSAGE(shard.exit_code == 0, shard.err);
    CHECK(count(shard.out, " simulated in ") == 3);
    CHECK(!fs::exists(dir + "/split/small/summary.csv"));  // shards leave the summaries to merge
  }
  CliResult partial = run_locosim("merge s.yaml -o split", dir);
  CHECK(partial.exit_code == 1);
  CHECK(partial.err.find("3 runs are not finished") != std::string::npos);
  CHECK(partial.err.find("bandwidth=5Mbps+inner_steps=4/ddp") != std::string::npos);  // position 2: shard 2/4
  CHECK(run_locosim("run s.yaml -o split --shard 2/4", dir).exit_code == 0);
  CliResult merged = run_locosim("merge s.yaml -o split", dir);
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
  CHECK(read_file(dir + "/split/small/summary.csv") == read_file(dir + "/whole/small/summary.csv"));
  CHECK(read_file(dir + "/split/small/bandwidth=20Mbps+inner_steps=2/summary.csv") ==
        read_file(dir + "/whole/small/bandwidth=20Mbps+inner_steps=2/summary.csv"));

  for (const char* bad : {"4/4", "1", "a/3", "-1/3", "0/0"}) {
    CliResult r = run_locosim(std::string("run s.yaml --shard ") + bad, dir);
    CHECK_MESSAGE(r.exit_code == 2, bad);
    CHECK(r.err.find("write i/n with 0 <= i < n") != std::string::npos);
  }
}

TEST_CASE("resume: the run hash follows what the run depends on, and only that") {
  const std::string dir = sweep_dir("resume-hash");
  const std::string file = dir + "/s.yaml";
  const std::vector<std::string> base = hashes(file);
  REQUIRE(base.size() == 12);
  CHECK(std::regex_match(base[0], std::regex("[0-9a-f]{64}")));
  // ddp does not read inner_steps: its runs at one bandwidth are the same run (3 ddp + 6 diloco).
  CHECK(std::set<std::string>(base.begin(), base.end()).size() == 9);
  CHECK(base[0] == base[2]);
  CHECK(hashes(file) == base);

  // Another policy in the list: the others' runs stay finished.
  write_file(file, replaced(sweep_yaml(), "  - {name: diloco, inner_steps: 4}\n",
                            "  - {name: diloco, inner_steps: 4}\n  - {name: fedavg, inner_steps: 3}\n"));
  std::vector<std::string> more = hashes(file);
  REQUIRE(more.size() == 18);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(more[3 * i] == base[2 * i]);
    CHECK(more[3 * i + 1] == base[2 * i + 1]);
  }
  // A setting every policy uses, or the corpus's bytes: every run changes.
  write_file(file, replaced(sweep_yaml(), "eval_batches: 2", "eval_batches: 3"));
  for (size_t i = 0; i < 12; ++i) CHECK(hashes(file)[i] != base[i]);
  write_file(file, sweep_yaml());
  write_file(dir + "/corpus.txt", read_file(dir + "/corpus.txt") + "x");
  for (size_t i = 0; i < 12; ++i) CHECK(hashes(file)[i] != base[i]);

  // A run folder from another scenario is not finished: it is computed again.
  CHECK(run_locosim("run s.yaml -p ddp", dir).exit_code == 0);
  write_file(file, replaced(sweep_yaml(), "seed: 3", "seed: 4"));
  CliResult changed = run_locosim("run s.yaml -p ddp", dir);
  CHECK(skipped(changed.out) == 0);
  CHECK(count(changed.out, " simulated in ") == 6);
  CHECK(read_file(dir + "/runs/small/bandwidth=5Mbps+inner_steps=2/ddp/" + kScenarioHashFile) ==
        hashes(file)[0] + "\n");
}

TEST_CASE("slurm: the job array lists only the runs not finished, and its scripts run the sweep to the end") {
  const std::string dir = sweep_dir("slurm-scripts");
  REQUIRE(run_locosim("run s.yaml -o whole -j 2", dir).exit_code == 0);
  REQUIRE(run_locosim("run s.yaml -o runs -p ddp -j 2", dir).exit_code == 0);  // the 6 ddp runs: even positions

  CliResult all = run_locosim("submit s.yaml --no-submit", dir);
  REQUIRE_MESSAGE(all.exit_code == 0, all.err);
  CHECK(all.out.find("6 of 12 runs in 6 array tasks") != std::string::npos);
  const std::string array = read_file(dir + "/runs/small/slurm/array.sbatch");
  CHECK(array.find("#SBATCH --array=1,3,5,7,9,11\n") != std::string::npos);
  CHECK(array.find("--shard \"${SLURM_ARRAY_TASK_ID}/12\"") != std::string::npos);
  CHECK(array.find("#SBATCH --output=\"" + fs::canonical(dir).string() + "/runs/small/slurm/logs/%A_%a.out\"\n") !=
        std::string::npos);

  CliResult fewer = run_locosim("submit s.yaml --no-submit --max-tasks 4 --sbatch=--time=0:10:00", dir);
  REQUIRE_MESSAGE(fewer.exit_code == 0, fewer.err);
  CHECK(fewer.out.find("6 of 12 runs in 2 array tasks") != std::string::npos);
  const std::string four = read_file(dir + "/runs/small/slurm/array.sbatch");
  CHECK(four.find("#SBATCH --array=1,3\n") != std::string::npos);  // positions 1, 5, 9 and 3, 7, 11
  CHECK(four.find("#SBATCH --time=0:10:00\n") != std::string::npos);
  CHECK(read_file(dir + "/runs/small/slurm/merge.sbatch").find("#SBATCH --time=0:10:00\n") != std::string::npos);

  // What SLURM would do: each listed array task, then the merge job.
  for (const char* task : {"1", "3"}) {
    const std::string command = "cd '" + dir + "' && SLURM_ARRAY_TASK_ID=" + task + " bash runs/small/slurm/array.sbatch >/dev/null";
    CHECK_MESSAGE(std::system(command.c_str()) == 0, task);
  }
  CHECK(finished_runs(fs::path(dir) / "runs" / "small") == 12);
  CHECK(std::system(("cd '" + dir + "' && bash runs/small/slurm/merge.sbatch >/dev/null").c_str()) == 0);
  CHECK(read_file(dir + "/runs/small/summary.csv") == read_file(dir + "/whole/small/summary.csv"));
  CHECK(run_locosim("submit s.yaml --no-submit", dir).out.find("all 12 runs are finished: nothing to submit") !=
        std::string::npos);
  CHECK(array_ranges({0, 1, 2, 3, 5, 7, 8, 9}) == "0-3,5,7-9");
  CHECK(array_ranges({4}) == "4");
}

TEST_CASE("resume: a finished run folder that lost or truncated a file is computed again, saying why") {
  // Regression: with metrics.csv, events.csv, trace.json and exact_losses.csv deleted, a rerun said
  // "finished earlier" and never wrote them again.
  const std::string dir = scratch_dir("resume-damaged");
  write_corpus(dir + "/corpus.txt", 30000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  REQUIRE(run_locosim("run s.yaml -p ddp", dir).exit_code == 0);
  const fs::path ddp = fs::path(dir) / "runs" / "small" / "ddp";
  const std::string events = read_file((ddp / "events.csv").string());
  const std::string metrics = read_file((ddp / "metrics.csv").string());
  REQUIRE(!events.empty());
  CHECK(read_file((ddp / ".locosim").string()).find(std::to_string(events.size()) + " events.csv\n") != std::string::npos);

  for (const char* file : {"metrics.csv", "events.csv", "trace.json", "exact_losses.csv"}) fs::remove(ddp / file);
  CliResult again = run_locosim("run s.yaml -p ddp", dir);
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  CHECK(skipped(again.out) == 0);
  CHECK(again.out.find("runs/small/ddp finished earlier, but events.csv is missing: computed again") != std::string::npos);
  CHECK(count(again.out, " simulated in ") == 1);
  CHECK(read_file((ddp / "events.csv").string()) == events);
  CHECK(read_file((ddp / "metrics.csv").string()) == metrics);
  CHECK(fs::exists(ddp / "trace.json"));
  CHECK(fs::exists(ddp / "exact_losses.csv"));

  fs::resize_file(ddp / "events.csv", 0);  // truncated, as by a full disk on a copy
  CliResult truncated = run_locosim("run s.yaml -p ddp", dir);
  CHECK(truncated.out.find("but events.csv holds 0 bytes, not the " + std::to_string(events.size()) + " written") !=
        std::string::npos);
  CHECK(read_file((ddp / "events.csv").string()) == events);
  CHECK(skipped(run_locosim("run s.yaml -p ddp", dir).out) == 1);  // intact again

  // merge does not count it either, nor does a folder whose marker lists no files (an older locosim's).
  write_file((ddp / ".locosim").string(), "written by locosim\n");
  CliResult merged = run_locosim("merge s.yaml -p ddp", dir);
  CHECK(merged.exit_code == 1);
  CHECK(merged.err.find("1 runs are not finished (ddp)") != std::string::npos);
  const Sweep sweep = load_sweep(dir + "/s.yaml");
  CHECK(damaged_run_problem(ddp, run_hash(sweep.points[0].scenario, sweep.points[0].scenario.policies[0])) ==
        "its .locosim marker lists no files (written by an older locosim, or by hand)");
}

TEST_CASE("slurm: a newline in -o, the scenario's file name or an --sbatch option is refused with exit 2, nothing written") {
  // Regression: it became a bare line of array.sbatch and merge.sbatch, run as a command by the job.
  const std::string dir = scratch_dir("slurm-newline");
  write_corpus(dir + "/corpus.txt", 30000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  write_file(dir + "/s\ntouch evil.yaml", small_scenario_yaml());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"submit s.yaml --no-submit -o 'runs\ntouch evil'", "error: -o/--output: 'runs\\ntouch evil' holds a control character"},
      {"submit 's\ntouch evil.yaml' --no-submit", "error: the scenario file '"},
      {"submit s.yaml --no-submit '--sbatch=--time=1:00\ntouch evil'",
       "error: --sbatch '--time=1:00\\ntouch evil' holds a control character"},
  };
  for (const auto& [args, message] : cases) {
    CAPTURE(args);
    CliResult r = run_locosim(args, dir);
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/runs"));
    CHECK_FALSE(fs::exists(dir + "/runs\ntouch evil"));
  }

  // Quoted for sbatch where sbatch reads a path: spaces, quotes and '%' stay part of it.
  CliResult odd = run_locosim("submit s.yaml --no-submit -o 'my \"runs\" 100%'", dir);
  REQUIRE_MESSAGE(odd.exit_code == 0, odd.err);
  const std::string root = fs::canonical(dir).string() + "/my \\\"runs\\\" 100%%/small/slurm";
  CHECK(read_file(dir + "/my \"runs\" 100%/small/slurm/array.sbatch").find("#SBATCH --output=\"" + root + "/logs/%A_%a.out\"\n") !=
        std::string::npos);
  CHECK(read_file(dir + "/my \"runs\" 100%/small/slurm/merge.sbatch").find("#SBATCH --output=\"" + root + "/logs/merge-%j.out\"\n") !=
        std::string::npos);
}

TEST_CASE("estimate: a small run is priced in kB, and refused for disk only when half its estimate would not fit") {
  // Regression: "needs 0 MB ... has 0 MB free", refusing a run that fits (the estimate is within
  // about 2x, and a full disk fails a run cleanly).
  CHECK(human_bytes(300e3) == "300 kB");
  CHECK(human_bytes(2.5e6) == "2.5 MB");
  CHECK(human_bytes(850e6) == "850 MB");
  CHECK(human_bytes(13.7e9) == "13.7 GB");
  RunEstimate small;
  small.memory_bytes = 400e6;
  small.disk_bytes = 300e3;
  small.seconds = 2;
  const std::string note = check_run_fits({small}, 1, MachineRoom{20e9, 200e3}, false);
  CHECK(note.find("300 kB on disk") != std::string::npos);
  CHECK(note.find("the output folder's disk has 200 kB free, which may not be enough") != std::string::npos);
  CHECK_THROWS_WITH_AS(check_run_fits({small}, 1, MachineRoom{20e9, 100e3}, false),
                       doctest::Contains("300 kB on disk and 2 s of single-core time; the output folder's disk has 100 kB free"),
                       std::invalid_argument);
}
