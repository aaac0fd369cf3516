// Simulates one policy of a scenario: K worker actors on the SimGrid platform, each running the
// TrainLoop with real LibTorch steps; writes the run folder's files into `dir`.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "scenario/scenario.hpp"
#include "report/recorder_csv.hpp"

namespace locosim {

// Besides metrics.csv, events.csv and summary.json, writes links.csv (sim/links.hpp) and trace.json
// (report/trace.hpp). With `step_threads` > 1 the workers' real steps run on that many threads
// (sim/step_pool.hpp; results do not change). `progress`, if set, is called with worker 0's step and simulated time after each step.
// REQUIRES: no SimGrid Engine was ever created in this process (SimGrid allows one per process;
// the CLI forks a child per policy). Throws std::runtime_error if a worker fails.
using ProgressFn = std::function<void(int64_t step, double time_s)>;

// The numbers of a finished run that trained the same values as this one (an equal numerics_hash,
// report/resume.hpp): its exact losses by (worker, step) and its final parameters' fingerprint.
struct ReusedNumerics {
  ExactLosses losses;
  std::string params_fingerprint;
  std::optional<double> final_validation_loss;
};
// Reads them from a finished run folder. Throws std::runtime_error naming the file.
ReusedNumerics read_reused_numerics(const std::string& run_dir);

// With `reused`, the run is re-timed: only its schedule runs (as numerics: none), and the losses and
// fingerprint come from `reused`, put in place before anything is written, so that every file is the
// full run's. Throws std::runtime_error if `reused` lacks a step the schedule recorded.
void simulate_policy(const Scenario& scenario, const PolicySpec& policy, const std::string& dir,
                     int step_threads = 1, const ProgressFn& progress = {}, const ReusedNumerics* reused = nullptr);

}  // namespace locosim
