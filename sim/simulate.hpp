// Simulates one policy of a scenario: K worker actors on the SimGrid platform, each running the
// TrainLoop with real LibTorch steps; writes the run folder's files into `dir`.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "config/scenario.hpp"

namespace locosim {

// Besides metrics.csv, events.csv and summary.json, writes links.csv (sim/links.hpp) and trace.json
// (report/trace.hpp). With `step_threads` > 1 the workers' real steps run on that many threads
// (sim/step_pool.hpp; results do not change). `progress`, if set, is called with worker 0's step and simulated time after each step.
// REQUIRES: no SimGrid Engine was ever created in this process (SimGrid allows one per process;
// the CLI forks a child per policy). Throws std::runtime_error if a worker fails.
using ProgressFn = std::function<void(int64_t step, double time_s)>;
void simulate_policy(const Scenario& scenario, const PolicySpec& policy, const std::string& dir,
                     int step_threads = 1, const ProgressFn& progress = {});

}  // namespace locosim
