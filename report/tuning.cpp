// choose_tuned: each tuned entry at the point of its grid with the lowest mean validation loss.
#include "report/tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "scenario/scenario.hpp"
#include "report/csv_field.hpp"
#include "report/seed_table.hpp"

namespace locosim {

namespace {

// `label`'s validation losses over the seeds that ran it.
std::vector<double> validation_losses(const std::string& label, const std::vector<std::vector<RunSummary>>& per_seed) {
  std::vector<double> out;
  for (const auto& table : per_seed) {
    for (const RunSummary& r : table) {
      if (r.label == label && r.final_validation_loss) out.push_back(*r.final_validation_loss);
    }
  }
  return out;
}

std::string setting_of(const TunedLabel& t) {
  std::string out;
  for (const auto& [key, value] : t.values) out += (out.empty() ? "" : ", ") + key + "=" + value;
  return out;
}

}  // namespace

std::vector<TuneChoice> choose_tuned(const std::vector<TunedLabel>& labels,
                                     const std::vector<std::vector<RunSummary>>& per_seed) {
  std::vector<TuneChoice> out;
  for (const TunedLabel& t : labels) {
    if (t.tuned_from.empty()) {
      out.push_back({t.label, t.label, "defaults", 1, interval95(validation_losses(t.label, per_seed))});
      continue;
    }
    auto entry = std::find_if(out.begin(), out.end(), [&](const TuneChoice& c) { return c.entry == t.tuned_from; });
    const Interval validation = interval95(validation_losses(t.label, per_seed));
    if (entry == out.end()) {
      out.push_back({t.tuned_from, t.label, setting_of(t), 1, validation});
      continue;
    }
    entry->points += 1;
    const bool better = validation.n > 0 && (entry->validation.n == 0 || validation.mean < entry->validation.mean);
    if (better) {
      entry->chosen = t.label;
      entry->setting = setting_of(t);
      entry->validation = validation;
    }
  }
  return out;
}

std::vector<std::vector<RunSummary>> chosen_runs(const std::vector<TuneChoice>& choices,
                                                 const std::vector<std::vector<RunSummary>>& per_seed) {
  std::vector<std::vector<RunSummary>> out;
  for (const auto& table : per_seed) {
    std::vector<RunSummary>& rows = out.emplace_back();
    for (const TuneChoice& c : choices) {
      for (const RunSummary& r : table) {
        if (r.label != c.chosen) continue;
        rows.push_back(r);
        rows.back().label = c.entry;
      }
    }
  }
  return out;
}

std::vector<TuneChoice> tune_choices(const Scenario& scenario, const std::vector<std::vector<RunSummary>>& per_seed) {
  std::vector<TunedLabel> labels;
  for (const PolicySpec& p : scenario.policies) labels.push_back({p.label, p.tuned_from, p.tune_values});
  if (std::none_of(labels.begin(), labels.end(), [](const TunedLabel& t) { return !t.tuned_from.empty(); })) return {};
  return choose_tuned(labels, per_seed);
}

std::string tuned_csv_header() {
  return "entry,chosen,setting,points,validation_loss_mean,validation_loss_ci95,validation_seeds";
}

std::string tuned_csv_row(const TuneChoice& c) {
  return fmt::format("{},{},{},{},{},{},{}", csv_field(c.entry), csv_field(c.chosen), csv_field(c.setting), c.points,
                     c.validation.n > 0 ? csv_number(c.validation.mean) : std::string(),
                     c.validation.n > 0 ? csv_number(c.validation.half_width) : std::string(), c.validation.n);
}

std::string tuned_comparison(const Scenario& scenario, const std::vector<uint64_t>& seeds,
                             const std::vector<std::vector<RunSummary>>& per_seed) {
  const std::vector<TuneChoice> choices = tune_choices(scenario, per_seed);
  if (choices.empty()) return "";
  const auto chosen = chosen_runs(choices, per_seed);
  const std::string table = per_seed.size() > 1 ? format_seed_table(summarize_seeds(seeds, chosen))
                                                : format_table(chosen.front());
  return "\nat their best settings:\n" + table + format_tune_choices(choices);
}

std::string format_tune_choices(const std::vector<TuneChoice>& choices) {
  size_t width = 6, setting_width = 7;
  for (const auto& c : choices) width = std::max(width, c.entry.size()), setting_width = std::max(setting_width, c.setting.size());
  std::string out = "tuned: each entry with a tune: grid at its point of lowest mean validation loss; the losses "
                    "above are on the eval split, which the choice never reads\n";
  out += fmt::format("{:<{}}  {:<{}}  {:>9}  {}\n", "policy", width, "setting", setting_width, "of points", "validation loss");
  for (const auto& c : choices) {
    std::string loss = "-";
    if (c.validation.n > 0) {
      loss = std::isnan(c.validation.half_width) ? fmt::format("{:.3f}", c.validation.mean)
                                                 : fmt::format("{:.3f} ± {:.3f}", c.validation.mean, c.validation.half_width);
    }
    out += fmt::format("{:<{}}  {:<{}}  {:>9}  {}\n", c.entry, width, c.setting, setting_width, c.points, loss);
  }
  return out;
}

}  // namespace locosim
