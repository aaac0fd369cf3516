// Simulates one policy of a scenario: K worker actors on the SimGrid platform, each running the
// TrainLoop with real LibTorch steps; writes the run folder's files into `dir`.
#pragma once
#include <string>

#include "config/scenario.hpp"

namespace locosim {

// REQUIRES: no SimGrid Engine was ever created in this process (SimGrid allows one per process;
// the CLI forks a child per policy). Throws std::runtime_error if a worker fails.
void simulate_policy(const Scenario& scenario, const PolicySpec& policy, const std::string& dir);

}  // namespace locosim
