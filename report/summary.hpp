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
  std::string params_fingerprint;     // of worker 0's final parameters: equal runs give equal prints
};

// FNV-1a (64 bit, hex) over the bytes of the tensors: a cheap check that two runs ended on the same
// parameters, bit for bit.
std::string params_fingerprint(const std::vector<torch::Tensor>& params);

RunSummary summarize(const Recorder& recorder, int workers, std::optional<double> target_loss);

void write_summary_json(const RunSummary& s, const std::string& path);
RunSummary read_summary_json(const std::string& path);  // throws std::runtime_error naming the path

// summary.csv across the policies of a scenario, one row each.
void write_summary_csv(const std::vector<RunSummary>& rows, const std::string& path);

// The side-by-side table printed at the end of a run.
std::string format_table(const std::vector<RunSummary>& rows);

}  // namespace locosim
