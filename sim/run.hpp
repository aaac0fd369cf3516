// Runs a scenario's policies, each in a child process of its own (SimGrid allows one engine per
// process), and assembles runs/<scenario>/: one folder per policy plus summary.csv. Each folder is
// written under a hidden temporary name and renamed into place only when complete.
#pragma once
#include <string>
#include <vector>

#include "algorithms/summary.hpp"
#include "config/scenario.hpp"

namespace locosim {

struct RunOptions {
  std::string output_root = "runs";
  std::vector<std::string> only_labels;  // empty: every policy
  int jobs = 0;                          // policies simulated at once; 0: one per core
};

// Returns the summaries in the scenario's policy order. Throws std::runtime_error if any policy
// failed (its folder is then not created) or std::invalid_argument for an unknown label.
std::vector<RunSummary> run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace locosim
