// Runs a scenario's policies (at every point of its sweep, if it has one), each in a child process
// of its own (SimGrid allows one engine per process), and assembles the run folders:
//   runs/<scenario>/<policy>/ and runs/<scenario>/summary.csv                 without a sweep
//   runs/<scenario>/<point>/<policy>/, a summary.csv per point, and one runs/<scenario>/summary.csv
//   for the whole grid (columns: point, one per sweep key, then the usual ones)  with a sweep
// Each policy folder is written under a hidden temporary name and renamed into place only when complete,
// with the hash of what it ran (report/resume.hpp): a run already finished is not computed again, so an
// interrupted sweep resumes where it stopped, and a sweep can be split into shards run on several
// machines (--shard, or a SLURM job array: cli/slurm.hpp), then merged into the summaries.
// A sweep's points that differ only in what times a run (the platform's links and accelerators, the
// network model, the world's slowdowns, the timing scale) train the same numbers: for a policy that
// does not read the clock, on a world where nothing fails, the first such run of the plan trains and
// the others are re-timed from it (its schedule only, with its losses: the same files as a full run).
// Children report each step through a pipe; the parent shows live progress lines (cli/progress.hpp).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"
#include "report/seed_table.hpp"
#include "report/summary.hpp"
#include "cli/sweep.hpp"

namespace locosim {

// Part `index` of `count` (0 <= index < count): the runs whose position in the plan is index modulo count.
struct RunShard {
  int index = 0;
  int count = 1;
};

// Reads "i/n". Throws std::invalid_argument saying what is wrong.
RunShard parse_shard(const std::string& text);

struct RunOptions {
  std::string output_root = "runs";
  std::vector<std::string> only_labels;  // empty: every policy
  int jobs = 0;                          // policies simulated at once; 0: one per core
  bool cost = false;                     // print each policy's real time against its LibTorch steps' time
  int step_threads = 0;                  // workers' real steps run at once in each simulation (sim/step_pool.hpp);
                                         // 0: the cores left to each running policy by jobs and runtime.threads
  bool live_progress = false;            // redraw a line per running policy (the CLI: on a terminal only)
  bool recompute = false;                // run even what a finished run folder already holds
  bool retime = true;                    // re-time runs that train what an earlier run of the plan trains
  RunShard shard;                           // the part of the plan to run; {0, 1}: all of it
  std::optional<int64_t> seeds;             // --seeds N: seed, ..., seed + N - 1 instead of the file's seeds
  std::vector<std::string> overrides;       // --set key=value, as given (a SLURM task repeats them)
};

// One (sweep point, policy) of a plan.
struct PlannedRun {
  const SweepPoint* point = nullptr;
  const PolicySpec* policy = nullptr;
  std::filesystem::path dir;  // its run folder
  std::string name;           // in progress lines: the label, or point/label
  std::string hash;           // run_hash (report/resume.hpp)
  bool finished = false;      // `dir` holds a finished run with this hash
  // The earlier run of the plan that trains the same numbers (report/resume.hpp's numerics_hash), when
  // this one may be re-timed from it: it then waits for that one to finish, and simulates only its
  // schedule. Empty: it trains.
  struct Reference {
    std::filesystem::path dir;
    std::string hash;
    std::string name;
  };
  std::optional<Reference> retime_from;
};

// The scenario's policies whose labels are in `only` (all when empty), in order. Throws
// std::invalid_argument for a label the scenario does not have.
std::vector<const PolicySpec*> selected_policies(const Scenario& scenario, const std::vector<std::string>& only);

// Policies simulated at once: options.jobs, or one per core.
int effective_jobs(const RunOptions& options);

// Every selected (point, policy) in a stable order (points in grid order, policies in scenario order),
// the same on every machine for the same scenario file and labels, then only options.shard's part.
// With options.retime, a run that may be re-timed says from which run: the plan's first run with its
// numbers if that one has finished (whichever shard ran it), else the first of them in this part.
std::vector<PlannedRun> plan_runs(const Sweep& sweep, const RunOptions& options);

// Simulates the runs that are not finished (all of them with options.recompute), at most `jobs` at once.
// Throws std::runtime_error naming the failed ones (their folders are not created), or Interrupted.
void run_planned(const std::vector<PlannedRun>& runs, const RunOptions& options);

// What the run folders hold for a sweep (or a scenario: one point named ""), assembled into its summary
// files: summary.csv (per point and for the grid) lists every policy of the scenario with a finished
// run of the current scenario, whoever computed it. Nothing is simulated.
struct Merged {
  std::vector<std::vector<RunSummary>> tables;  // per point: its selected policies that are finished
  std::vector<std::string> missing;             // the selected runs not finished ("point/label")
  // At several seeds: per grid point (named as without seeds), its selected policies over the seeds.
  // Also written, for every policy with a finished run, to runs/<scenario>/seeds.csv.
  struct SeedGroup {
    std::string name;
    std::vector<SeedSummary> rows;
    std::vector<uint64_t> seeds;
    std::vector<std::vector<RunSummary>> per_seed;  // each seed's table (of the selected policies)
  };
  std::vector<SeedGroup> seed_groups;
};
Merged merge_runs(const Sweep& sweep, const RunOptions& options);

// plan_runs, run_planned, then merge_runs: a whole sweep (or scenario) on this machine.
Merged run_sweep(const Sweep& sweep, const RunOptions& options);

}  // namespace locosim
