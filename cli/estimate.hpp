// An up-front estimate of what simulating one policy of a scenario costs this machine (memory, disk,
// wall time), and the check that refuses a run that would not fit before anything is written.
//
// The figures are coarse (within about 2x): the run's rows are counted from its schedule (compute
// per worker and step; each collective's point-to-point messages, a send row and a recv row each: 2K(K-1)
// messages around an exact ring, 2K through a relay or with aggregated flows),
// and each row is priced at what runs measured: memory (recorder and trace held in memory), bytes
// written (events.csv and trace.json) and simulation time. Real LibTorch work is priced from the
// proxy model's FLOPs at a conservative single-core rate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scenario/scenario.hpp"

namespace locosim {

struct RunEstimate {
  double memory_bytes = 0;  // peak resident memory of the process simulating the policy
  double disk_bytes = 0;    // what its run folder holds
  double seconds = 0;       // wall time on one core
  double torch_seconds = 0; // of which the real LibTorch steps and evaluations (0 with numerics: none)
  double rows = 0;          // rows of events.csv (the driver of all three at scale)
};

RunEstimate estimate_policy_run(const Scenario& scenario, const PolicySpec& policy);

// What this machine offers: available memory (/proc/meminfo MemAvailable) and free space where the
// run folders go.
struct MachineRoom {
  double memory_bytes = 0;
  double disk_bytes = 0;
};
MachineRoom machine_room(const std::string& output_root);

// Sums the policies' estimates (memory: the `jobs` largest at once). Throws std::invalid_argument with
// the figures if memory would not fit, or disk even at half the estimate (unless `force`); returns a
// note to print ("" when the run is small) naming the figures when they are large enough to matter,
// or a warning when the disk might not hold the whole estimate.
std::string check_run_fits(const std::vector<RunEstimate>& runs, int jobs, const MachineRoom& room, bool force);

// How long the runs take on this machine, `jobs` at once, as a range within which the estimate puts
// the truth (it is within 2x on the shipped scenarios): "20 s to 80 s".
std::string machine_time_range(const std::vector<RunEstimate>& runs, int jobs);

// "13.7 GB", "850 MB", "2.5 MB", "300 kB"; "3.2 min", "1.5 h".
std::string human_bytes(double bytes);
std::string human_seconds(double seconds);

}  // namespace locosim
