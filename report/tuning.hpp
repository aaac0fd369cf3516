// Comparing methods at their best settings: a policy entry with a `tune:` grid runs once per point
// (PolicySpec::tuned_from, tune_values), and the comparison takes, for each such entry, the point with
// the lowest mean loss on the validation split over the seeds. The choice reads the validation loss
// only: the losses the tables report are on the eval (test) split, which the choice never sees.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "report/confidence.hpp"
#include "report/summary.hpp"

namespace locosim {

// What the scenario says of one run label: the entry it is a point of ("" if untuned) and the point.
struct TunedLabel {
  std::string label;
  std::string tuned_from;
  std::vector<std::pair<std::string, std::string>> values;
};

struct TuneChoice {
  std::string entry;                 // the policy entry's label
  std::string chosen;                // the label of the run that represents it (itself when untuned)
  std::string setting;               // "outer_lr=0.5, inner_steps=50", or "defaults"
  int points = 1;                    // points of its grid (1: untuned)
  Interval validation;               // the chosen point's validation loss over the seeds (n = 0: none)
};

// One choice per policy entry, in the order of `labels`. per_seed: each seed's finished runs. A point
// without a validation loss at some seed is compared on the seeds it has; a point with none at all is
// never chosen while another has one. Ties go to the earlier point.
std::vector<TuneChoice> choose_tuned(const std::vector<TunedLabel>& labels,
                                     const std::vector<std::vector<RunSummary>>& per_seed);

// choose_tuned over `scenario`'s policy entries; empty when none has a tune: grid.
struct Scenario;
std::vector<TuneChoice> tune_choices(const Scenario& scenario, const std::vector<std::vector<RunSummary>>& per_seed);

// tuned.csv (written beside seeds.csv): its header and the cells of one choice.
std::string tuned_csv_header();
std::string tuned_csv_row(const TuneChoice& choice);

// Each seed's table reduced to the chosen runs, each under its entry's label (the tuned comparison).
std::vector<std::vector<RunSummary>> chosen_runs(const std::vector<TuneChoice>& choices,
                                                 const std::vector<std::vector<RunSummary>>& per_seed);

// With tune: grids among `scenario`'s policies: "at their best settings:", the table of the chosen runs
// (a seed table with several seeds), and the choices. "" without a grid.
std::string tuned_comparison(const Scenario& scenario, const std::vector<uint64_t>& seeds,
                             const std::vector<std::vector<RunSummary>>& per_seed);

// The block printed under a tuned comparison's table: which point each entry was taken at.
std::string format_tune_choices(const std::vector<TuneChoice>& choices);

}  // namespace locosim
