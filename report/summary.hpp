// One run's headline numbers (a row of the comparison table), derived from its Recorder, and the
// files that carry them: summary.json per policy, summary.csv per scenario, the terminal table.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "algorithms/recorder.hpp"

namespace locosim {

struct RunSummary {
  std::string label;                  // the policy entry's label
  std::string policy;                 // the policy's name
  int workers = 0;
  int64_t steps = 0;
  int64_t tokens = 0;                 // summed over workers
  double wall_clock_s = 0;            // when the last worker finished
  double compute_utilization = 0;     // mean over workers of compute time / wall-clock
  double sent_bytes_per_worker = 0;   // mean over workers
  double recv_bytes_per_worker = 0;
  double final_train_loss = 0;        // mean over workers of their last 10 steps
  double final_eval_loss = 0;         // mean over workers of the evaluation after the last step
  std::optional<double> target_loss;
  std::optional<double> time_to_target_s;  // first evaluation whose mean over workers reaches target_loss
  std::string params_fingerprint;     // of the first finished worker's final parameters: equal runs give equal prints
  // On a changing world (all zero on a static one):
  int workers_lost = 0;               // times a worker was lost (its host failed)
  int workers_joined = 0;             // times a worker joined the group mid-run (came back, or arrived late)
  int64_t syncs_committed = 0;        // synchronizations (steps) the group committed
  int64_t syncs_aborted = 0;          // synchronizations it gave up
  double compute_wasted_s = 0;        // compute thrown away, summed over workers (aborted syncs, work lost)
  int64_t useful_tokens = 0;          // tokens whose work reached a committed sync or the final model
  double goodput_tokens_per_s = 0;    // useful_tokens / wall_clock_s

  bool world_changed() const { return workers_lost + workers_joined + syncs_aborted > 0 || compute_wasted_s > 0; }
};

// FNV-1a (64 bit, hex) over the bytes of the tensors: a cheap check that two runs ended on the same
// parameters, bit for bit.
std::string params_fingerprint(const std::vector<torch::Tensor>& params);

// Losses are averaged over the workers that finished (a worker away at the end has no final model);
// syncs are counted once per step, from the metric rows. workers_lost/joined, compute_wasted_s and
// useful_tokens come from the run itself: the caller fills them in, then calls set_goodput.
RunSummary summarize(const Recorder& recorder, int workers, std::optional<double> target_loss);
void set_goodput(RunSummary& s);

void write_summary_json(const RunSummary& s, const std::string& path);
RunSummary read_summary_json(const std::string& path);  // throws std::runtime_error naming the path

// summary.csv across the policies of a scenario, one row each.
void write_summary_csv(const std::vector<RunSummary>& rows, const std::string& path);

// The side-by-side table printed at the end of a run.
std::string format_table(const std::vector<RunSummary>& rows);

}  // namespace locosim
