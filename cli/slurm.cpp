// submit_to_slurm: the job array and merge scripts, and their submission with sbatch.
#include "cli/slurm.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

#include "report/output_file.hpp"
#include "report/run_folder.hpp"
#include "cli/estimate.hpp"

namespace locosim {
namespace fs = std::filesystem;
namespace {

// A word for bash: in single quotes, each ' written as '\''.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A file name for an #SBATCH line, which sbatch reads with its own rules: in double quotes with '\'
// and '"' escaped, and '%' doubled (sbatch replaces %j, %A, ... in file names). `pattern` is added
// as it is: the job's own %-names.
std::string sbatch_file(const std::string& path, const std::string& pattern) {
  std::string out = "\"";
  for (char c : path) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
    if (c == '%') out += '%';
  }
  return out + pattern + "\"";
}

// Refuses what the scripts cannot hold: a control character ends a line of a job script (and the
// next line would run as a command); after a '\', sbatch replaces no %-name in a file name.
void check_embeddable(const std::string& what, const std::string& text, bool in_sbatch_line) {
  if (has_control_characters(text)) {
    throw std::invalid_argument(what + " '" + printable(text) +
                                "' holds a control character, which would end a line of the job script: rename it");
  }
  if (in_sbatch_line && text.find('\\') != std::string::npos) {
    throw std::invalid_argument(what + " '" + text + "' holds a '\\', after which sbatch would not name the logs "
                                "by job (%A_%a): choose a folder without one");
  }
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Runs `command` in a shell; returns what it printed (stdout and stderr). Throws std::runtime_error
// with that output if it fails.
std::string run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0) throw std::runtime_error(command + " failed: " + out);
  return out;
}

// sbatch --parsable prints "<id>" or "<id>;<cluster>".
std::string job_id(const std::string& printed) {
  std::string id = printed.substr(0, printed.find_first_of(";\n"));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    throw std::runtime_error("sbatch printed no job id: " + printed);
  }
  return id;
}

// The options that choose the runs: the same plan in every task and in the merge.
std::string policy_args(const RunOptions& options) {
  std::string args;
  for (const auto& label : options.only_labels) args += " --policy " + quoted(label);
  if (options.seeds) args += " --seeds " + std::to_string(*options.seeds);
  for (const auto& set : options.overrides) args += " --set " + quoted(set);  // the same scenario in every task
  return args;
}

}  // namespace

std::string array_ranges(const std::vector<size_t>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(sorted[i]) + (j > i ? "-" + std::to_string(sorted[j]) : "");
    i = j + 1;
  }
  return out;
}

SlurmJobs submit_to_slurm(const std::string& program, const std::string& scenario_file,
                          const std::vector<PlannedRun>& plan, const RunOptions& options, const SlurmOptions& slurm) {
  SlurmJobs jobs;
  if (plan.empty()) return jobs;
  const Scenario& first = plan.front().point->scenario;
  const fs::path output = fs::absolute(options.output_root);
  check_embeddable("the scenario file", fs::absolute(scenario_file).string(), false);
  check_embeddable("-o/--output", output.string(), true);
  check_embeddable("the locosim program", program, false);
  for (const auto& option : slurm.sbatch_options) check_embeddable("--sbatch", option, false);
  const fs::path root = child_path(output, first.name);
  const fs::path folder = child_path(root, "slurm");
  const fs::path logs = child_path(folder, "logs");

  // Array task i runs the plan's positions i, i+M, ...: M tasks, those with something to do submitted.
  const size_t m = std::min(plan.size(), static_cast<size_t>(std::max(1, slurm.max_tasks)));
  std::set<size_t> tasks;
  int threads = 1;
  double memory_bytes = 0;
  for (size_t position = 0; position < plan.size(); ++position) {
    const PlannedRun& run = plan[position];
    if (run.finished && !options.recompute) continue;
    ++jobs.runs;
    tasks.insert(position % m);
    threads = std::max(threads, run.point->scenario.threads);
    memory_bytes = std::max(memory_bytes, estimate_policy_run(run.point->scenario, *run.policy).memory_bytes);
  }
  const std::vector<size_t> indices(tasks.begin(), tasks.end());
  jobs.tasks = indices.size();
  if (indices.empty()) return jobs;

  claim_folder(root);
  claim_folder(folder);
  claim_folder(logs);
  const std::string name = "locosim-" + first.name;
  const std::string common = " " + quoted(fs::absolute(scenario_file).string()) + " --output " + quoted(output.string()) +
                             policy_args(options);
  std::ostringstream array;
  array << "#!/bin/bash\n"
        << "# " << jobs.runs << " runs of " << quoted(scenario_file) << " as a job array, written by `locosim submit`:\n"
        << "# task i computes the runs at positions i, i+" << m << ", ... of the sweep that are not finished.\n"
        << "#SBATCH --job-name=" << name << "\n"
        << "#SBATCH --array=" << array_ranges(indices) << "\n"
        << "#SBATCH --ntasks=1\n"
        << "#SBATCH --cpus-per-task=" << threads << "\n"
        << "#SBATCH --mem=" << static_cast<long long>(std::ceil(memory_bytes * 1.25 / (1 << 20))) + 64 << "M\n"
        << "#SBATCH --output=" << sbatch_file(logs.string(), "/%A_%a.out") << "\n";
  for (const auto& option : slurm.sbatch_options) array << "#SBATCH " << option << "\n";
  array << "exec " << quoted(program) << " run" << common << " --shard \"${SLURM_ARRAY_TASK_ID}/" << m
        << "\" --jobs 1 --no-progress" << (options.recompute ? " --force" : "") << "\n";
  std::ostringstream merge;
  merge << "#!/bin/bash\n"
        << "# Assembles the summaries of " << quoted(scenario_file) << " from the finished runs, written by `locosim submit`.\n"
        << "#SBATCH --job-name=" << name << "-merge\n"
        << "#SBATCH --ntasks=1\n"
        << "#SBATCH --cpus-per-task=1\n"
        << "#SBATCH --output=" << sbatch_file(logs.string(), "/merge-%j.out") << "\n";
  for (const auto& option : slurm.sbatch_options) merge << "#SBATCH " << option << "\n";
  merge << "exec " << quoted(program) << " merge" << common << "\n";

  jobs.array_script = folder / "array.sbatch";
  jobs.merge_script = folder / "merge.sbatch";
  write_text_file(jobs.array_script.string(), array.str());
  write_text_file(jobs.merge_script.string(), merge.str());
  if (!slurm.submit || !on_path("sbatch")) return jobs;
  jobs.array_job = job_id(run_command("sbatch --parsable " + quoted(jobs.array_script.string())));
  jobs.merge_job = job_id(run_command("sbatch --parsable --dependency=afterany:" + jobs.array_job + " " +
                                      quoted(jobs.merge_script.string())));
  return jobs;
}

}  // namespace locosim
