// The run folder's metrics.csv and events.csv, written from a Recorder (checked writes).
#pragma once
#include <string>

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

}  // namespace locosim
