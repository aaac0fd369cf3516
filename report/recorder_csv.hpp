// The run folder's metrics.csv and events.csv, written from a Recorder (checked writes).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"

namespace locosim {

// Rows sorted by (worker, step) and (worker, start, end), so that files do not depend on actor
// scheduling details. Throw std::runtime_error naming the file if a write fails.
void write_metrics_csv(const Recorder& recorder, const std::string& path);
void write_events_csv(const Recorder& recorder, const std::string& path);

// updates.csv of a run with a parameter server (asynchronous DiLoCo): one row per push applied, in
// the order applied: time_s,worker,version,staleness,steps.
void write_updates_csv(const std::vector<ServerUpdate>& updates, const std::string& path);

// exact_losses.csv: worker,step,train_loss,eval_loss of every metric row, the losses in hexadecimal
// floating point (exact; eval_loss empty where not evaluated). metrics.csv rounds them to 6 decimals;
// a re-timed run (cli/run.hpp) takes its losses from here, so that its summary is the full run's.
inline constexpr const char* kExactLossesFile = "exact_losses.csv";
void write_exact_losses_csv(const Recorder& recorder, const std::string& path);

// (worker, step) -> (train_loss, eval_loss) of an exact_losses.csv. Throws std::runtime_error naming
// the file and line if it cannot be read or a line is malformed.
using ExactLosses = std::map<std::pair<int, int64_t>, std::pair<double, double>>;
ExactLosses read_exact_losses_csv(const std::string& path);

}  // namespace locosim
