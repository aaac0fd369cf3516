// A scenario run at several training seeds: each policy's results as mean ± the half-width of their 95%
// confidence interval over the seeds (report/confidence.hpp), the table printed for them, and
// seeds.csv, the aggregate beside summary.csv's per-seed rows.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/confidence.hpp"
#include "report/summary.hpp"

namespace locosim {

struct SeedSummary {
  std::string label;
  std::string policy;
  std::vector<uint64_t> seeds;          // the seeds with a finished run of this policy
  bool timing_only = false;
  Interval wall_clock_s;
  Interval compute_utilization;
  Interval sent_bytes_per_worker;
  Interval recv_bytes_per_worker;
  Interval final_train_loss;
  Interval final_eval_loss;
  // At each seed, every policy's eval curve read when that seed's first policy finished (as in the
  // one-seed table): losses at equal wall-clock.
  Interval eval_loss_at_equal_time;
  std::optional<double> target_loss;
  Interval time_to_target_s;            // over the seeds that reached the target
  int reached_target = 0;
  std::vector<RunSummary> runs;         // each seed's run, in the order of `seeds`
};

// per_seed[i]: the finished runs of seeds[i] (merge_runs' table of that seed). One entry per label, in
// the order labels first appear.
std::vector<SeedSummary> summarize_seeds(const std::vector<uint64_t>& seeds,
                                         const std::vector<std::vector<RunSummary>>& per_seed);

// The table: a cell per metric "mean ± half-width", then the pairs of policies whose eval-loss
// intervals overlap ("not distinguishable at N seeds").
std::string format_seed_table(const std::vector<SeedSummary>& rows);

// The pairs "a and b" of rows whose intervals of `metric` overlap, in row order.
std::vector<std::pair<std::string, std::string>> indistinguishable(const std::vector<SeedSummary>& rows,
                                                                   Interval SeedSummary::*metric);

// seeds.csv's columns and one row's cells (cli/run.cpp puts a sweep's point columns before them).
std::string seeds_csv_header();
std::string seeds_csv_row(const SeedSummary& row);

}  // namespace locosim
