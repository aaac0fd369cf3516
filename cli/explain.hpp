// `locosim check --explain`: what each policy of a scenario will do, before it runs: the collective
// algorithm it uses (as resolved for the platform, never `auto`), one step's compute per accelerator
// type, the bytes per synchronization per worker, the simulated wall-clock, and how long the run will
// take on this machine. Not an analytic model: the policy's schedule is simulated (timing only, as
// `numerics: none` runs it; the whole run when that is cheap, else enough rounds to extrapolate from).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scenario/scenario.hpp"

namespace locosim {

struct PolicyExplanation {
  std::string label, policy;
  std::string collective;  // "all-reduce ring", "all-gather mesh", "parameter server (point to point)"
  std::vector<std::pair<std::string, double>> step_compute_s;  // per accelerator type, in rank order
  int64_t syncs = 0;                  // synchronizations in the whole run (rounds; steps for DDP-like policies)
  int64_t sync_every_steps = 1;
  double sent_per_sync_bytes = 0;     // per worker, the mean over workers
  double recv_per_sync_bytes = 0;
  double wall_clock_s = 0;            // simulated, the whole run
  int64_t simulated_steps = 0;        // steps the probe simulated; train.steps: not extrapolated
  double machine_s = 0;               // estimated time of the run on this machine, on one core
};

// Simulates the policy's schedule (in a child process: SimGrid allows one engine per process) into a
// temporary folder it removes. Throws std::runtime_error if that simulation fails.
PolicyExplanation explain_policy(const Scenario& scenario, const PolicySpec& policy);

// A run's time on this machine from two probes of its schedule, `short_steps` in `short_s` and `steps`
// in `probe_s` (more steps): a start-up (the platform, the workers, the files) plus a cost per step,
// the start-up counted once however many steps the run has. Where noise leaves the longer probe no
// slower than the shorter, the longer probe scaled whole (start-up included: an over-estimate).
double extrapolated_seconds(int64_t short_steps, double short_s, int64_t steps, double probe_s, int64_t total_steps);

// The explanation as `check --explain` prints it: a block per policy. `cores`: this machine's, for the
// time of the whole run with one policy per core.
std::string format_explanations(const Scenario& scenario, const std::vector<PolicyExplanation>& policies, int cores);

}  // namespace locosim
