// A sweep as a SLURM job array (`locosim submit`): array task i runs `locosim run --shard i/M` (the
// plan's runs at positions i, i+M, ...), each run in its own run folder, and a merge job that starts
// when the whole array has ended assembles the summaries from whatever finished (`locosim merge`).
// Only runs that are not finished are submitted; a failed or cancelled task is recomputed by
// submitting again. Everything it writes goes under runs/<scenario>/slurm/: the two job scripts, and
// logs/ with each task's output. The paths in the scripts are absolute: the run folders and the
// scenario must be on a file system that every node sees. Every path is quoted for bash or sbatch;
// one with a control character (a newline would start a command) is refused.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "cli/run.hpp"
#include "cli/sweep.hpp"

namespace locosim {

// --max-tasks at most: SLURM's largest MaxArraySize (4000001) allows indices up to 4000000.
inline constexpr int kMaxArrayTasks = 4000000;

struct SlurmOptions {
  std::vector<std::string> sbatch_options;  // extra #SBATCH lines ("--time=02:00:00", "--partition=cpu")
  int max_tasks = 1000;                     // array tasks at most (SLURM's default MaxArraySize is 1001)
  bool submit = true;                       // submit with sbatch (if false, or without sbatch: only write)
};

struct SlurmJobs {
  std::filesystem::path array_script, merge_script;
  size_t runs = 0;          // runs submitted
  size_t tasks = 0;         // array tasks
  std::string array_job;    // job ids; empty when not submitted
  std::string merge_job;
};

// Writes the scripts for the runs of `plan` (plan_runs of the whole sweep) that are not finished
// (all with options.recompute) and submits them. `program` is the locosim binary; `scenario_file`
// the scenario. Throws std::invalid_argument, before writing anything, if a path or --sbatch option
// holds a control character (or the output path a '\'); std::runtime_error if sbatch fails (with
// its message).
SlurmJobs submit_to_slurm(const std::string& program, const std::string& scenario_file,
                          const std::vector<PlannedRun>& plan, const RunOptions& options, const SlurmOptions& slurm);

// "0-3,5,7-9" for the sorted indices {0,1,2,3,5,7,8,9}: SLURM's --array syntax.
std::string array_ranges(const std::vector<size_t>& sorted);

}  // namespace locosim
