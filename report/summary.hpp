// One run's headline numbers (a row of the comparison table), derived from its Recorder, and the
// files that carry them: summary.json per policy, summary.csv per scenario, the terminal table.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"

namespace locosim {

// Compute utilization (compute time / wall-clock) of the workers whose hosts carry one accelerator type.
struct AcceleratorUtilization {
  std::string accelerator;  // the hosts' HostSpec::accelerator ("rtx4090")
  int workers = 0;
  double min = 0;
  double mean = 0;
  double max = 0;
};

struct RunSummary {
  std::string label;                  // the policy entry's label
  std::string policy;                 // the policy's name
  int workers = 0;
  int64_t steps = 0;
  int64_t tokens = 0;                 // summed over workers
  double wall_clock_s = 0;            // when the last worker finished or left (its last row or event)
  double compute_utilization = 0;     // mean over workers of compute time / wall-clock
  double utilization_min = 0;         // the least used worker's compute time / wall-clock
  double utilization_max = 0;         // the most used worker's
  std::vector<AcceleratorUtilization> utilization_by_accelerator;  // by type, in order of first rank
  double sent_bytes_per_worker = 0;   // mean over workers
  double recv_bytes_per_worker = 0;
  double final_train_loss = 0;        // mean over workers of their last 10 steps
  double final_eval_loss = 0;         // mean over workers of the evaluation after the last step (the test split)
  // With data.validation_fraction: the final models' loss on the validation split, the mean over the
  // workers that finished (what `tune:` chooses on; never the reported loss). Absent otherwise.
  std::optional<double> final_validation_loss;
  std::optional<double> target_loss;
  std::optional<double> time_to_target_s;  // first evaluation whose mean over workers reaches target_loss
  std::string params_fingerprint;     // of the first finished worker's final parameters: equal runs give equal prints
  // numerics: none: the schedule ran without the training; the losses are NaN (null in summary.json,
  // empty in summary.csv, "no loss" in the table) and there is no fingerprint.
  bool timing_only = false;
  // (time, mean eval loss): at each evaluation, once every worker that evaluates at all has
  // evaluated, the mean of each one's latest evaluation. Compares policies at equal wall-clock.
  std::vector<std::pair<double, double>> eval_curve;
  // On a changing world (all zero on a static one):
  int workers_lost = 0;               // times a worker was lost (its host failed)
  int workers_joined = 0;             // times a worker joined the group mid-run (came back, or arrived late)
  int64_t syncs_committed = 0;        // synchronizations (steps) the group committed
  int64_t syncs_aborted = 0;          // synchronizations it gave up
  double compute_wasted_s = 0;        // compute thrown away, summed over workers (aborted syncs, work lost)
  int64_t useful_tokens = 0;          // tokens whose work reached a committed sync or the final model
  double goodput_tokens_per_s = 0;    // useful_tokens / wall_clock_s
  // With a parameter server (asynchronous DiLoCo; null otherwise): the pushes it applied and their
  // staleness (server updates since the pushing worker last heard from it), from updates.csv.
  std::optional<int64_t> pushes_applied;
  std::optional<double> staleness_mean;
  std::optional<int64_t> staleness_max;

  // False for a summary.json from before locosim recorded the spread over workers: utilization_min
  // and _max are then 0, and the breakdown by accelerator empty.
  bool utilization_spread_known() const { return !utilization_by_accelerator.empty(); }
  // The mean eval loss at `time_s`: the curve's last point at or before it (nullopt before its first).
  std::optional<double> eval_loss_at(double time_s) const;
  bool world_changed() const { return workers_lost + workers_joined + syncs_aborted > 0 || compute_wasted_s > 0; }
};

// FNV-1a (64 bit, hex) over the bytes of the tensors: a cheap check that two runs ended on the same
// parameters, bit for bit.
std::string params_fingerprint(const std::vector<torch::Tensor>& params);

// `accelerators` holds each worker's accelerator type, by rank; its size is the number of workers
// (a relay host, recorded as worker accelerators.size(), is not one). Utilization counts every worker,
// also one that recorded nothing (a host that never came up, on a changing world): its compute over
// the wall-clock, 0 if none, since its idle accelerator is part of what the run cost.
// Losses are averaged over the workers that finished (a worker away at the end has no final model);
// syncs are counted once per step, from the metric rows. workers_lost/joined, compute_wasted_s and
// useful_tokens come from the run itself: the caller fills them in, then calls set_goodput.
RunSummary summarize(const Recorder& recorder, const std::vector<std::string>& accelerators,
                     std::optional<double> target_loss);
void set_goodput(RunSummary& s);
// Fills pushes_applied and the staleness fields from a parameter server's updates (none: left null).
void set_staleness(RunSummary& s, const std::vector<ServerUpdate>& updates);

void write_summary_json(const RunSummary& s, const std::string& path);
RunSummary read_summary_json(const std::string& path);  // throws std::runtime_error naming the path

// summary.csv across the policies of a scenario, one row each.
void write_summary_csv(const std::vector<RunSummary>& rows, const std::string& path);

// When the first of `rows` finished: the time at which the table reads every row's eval curve (losses
// at equal wall-clock). nullopt for a single row, or where a row has no eval curve.
std::optional<double> equal_time_s(const std::vector<RunSummary>& rows);

// "12.3 s", "4.5 min", "2.10 h": a duration as the tables print it.
std::string human_time(double s);

// With more than one accelerator type among the rows: a block with a column per type, in order of
// first appearance, of its workers' utilization under each policy (the fast ones' idle time).
std::string accelerator_block(const std::vector<RunSummary>& rows, size_t label_width);

// What a changing world cost a row: counts as a run has them, or means over seeds.
struct WorldCost {
  std::string label;
  double lost = 0, joined = 0, committed = 0, aborted = 0;
  double wasted_s = 0;
  double goodput = 0;  // tokens/s
};
WorldCost world_cost(const RunSummary& r);
// The block under the table on a changing world; counts with `count_decimals` decimals.
std::string world_cost_block(const std::vector<WorldCost>& rows, size_t label_width, int count_decimals);

// The side-by-side table printed at the end of a run; below it, a block of utilization per accelerator
// type where the rows have more than one type, and a block of what a changing world cost.
std::string format_table(const std::vector<RunSummary>& rows);

}  // namespace locosim
