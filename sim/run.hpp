// Runs a scenario's policies (at every point of its sweep, if it has one), each in a child process
// of its own (SimGrid allows one engine per process), and assembles the run folders:
//   runs/<scenario>/<policy>/ and runs/<scenario>/summary.csv                 without a sweep
//   runs/<scenario>/<point>/<policy>/, a summary.csv per point, and one runs/<scenario>/summary.csv
//   for the whole grid (columns: point, one per sweep key, then the usual ones)  with a sweep
// Each policy folder is written under a hidden temporary name and renamed into place only when complete.
// Children report each step through a pipe; the parent shows live progress lines (sim/progress.hpp).
#pragma once
#include <string>
#include <vector>

#include "report/summary.hpp"
#include "config/scenario.hpp"
#include "sim/sweep.hpp"

namespace locosim {

struct RunOptions {
  std::string output_root = "runs";
  std::vector<std::string> only_labels;  // empty: every policy
  int jobs = 0;                          // policies simulated at once; 0: one per core
  bool live_progress = false;            // redraw a line per running policy (the CLI: on a terminal only)
};

// The scenario's policies whose labels are in `only` (all when empty), in order. Throws
// std::invalid_argument for a label the scenario does not have.
std::vector<const PolicySpec*> selected_policies(const Scenario& scenario, const std::vector<std::string>& only);

// Policies simulated at once: options.jobs, or one per core.
int effective_jobs(const RunOptions& options);

// Returns the summaries in the scenario's policy order. Throws std::runtime_error if any policy
// failed (its folder is then not created) or std::invalid_argument for an unknown label.
std::vector<RunSummary> run_scenario(const Scenario& scenario, const RunOptions& options);

// The same for every point of a sweep (all points' policies share one pool of `jobs` processes);
// returns each point's summaries, in point order.
std::vector<std::vector<RunSummary>> run_sweep(const Sweep& sweep, const RunOptions& options);

}  // namespace locosim
