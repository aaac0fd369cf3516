// Aggregates over training seeds: summarize_seeds, the seed table, seeds.csv's rows.
#include "report/seed_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/csv_field.hpp"

namespace locosim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "1.234 ± 0.056"; "1.234" from one seed; "-" with no value.
std::string cell(const Interval& i, int decimals) {
  if (i.n == 0) return "-";
  if (std::isnan(i.half_width)) return fmt::format("{:.{}f}", i.mean, decimals);
  return fmt::format("{:.{}f} ± {:.{}f}", i.mean, decimals, i.half_width, decimals);
}

std::string time_cell(const Interval& i) {
  if (i.n == 0) return "-";
  if (std::isnan(i.half_width)) return human_time(i.mean);
  // The half-width in the mean's unit: "12.3 ± 0.4 s", "4.5 ± 0.2 min".
  const std::string mean = human_time(i.mean);
  const size_t space = mean.find(' ');
  const double scale = mean.substr(space + 1) == "min" ? 60 : mean.substr(space + 1) == "h" ? 3600 : 1;
  return fmt::format("{} ± {:.{}f}{}", mean.substr(0, space), i.half_width / scale, scale == 3600 ? 2 : 1,
                     mean.substr(space));
}

std::string seed_list(const std::vector<uint64_t>& seeds) {
  std::string out;
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (i == 8 && seeds.size() > 10) return out + ", ..., " + std::to_string(seeds.back());
    out += (i ? ", " : "") + std::to_string(seeds[i]);
  }
  return out;
}

// Under the table, the one-seed table's blocks (utilization per accelerator type, what a changing
// world cost) as means over each policy's seeds.
std::string means_blocks(const std::vector<SeedSummary>& rows, size_t label_width) {
  std::vector<RunSummary> by_type;
  std::vector<WorldCost> costs;
  bool changed = false;
  for (const SeedSummary& r : rows) {
    RunSummary mean;
    mean.label = r.label;
    WorldCost cost{r.label};
    const double n = static_cast<double>(r.runs.size());
    for (const RunSummary& run : r.runs) {
      changed = changed || run.world_changed();
      const WorldCost c = world_cost(run);
      cost.lost += c.lost / n, cost.joined += c.joined / n, cost.committed += c.committed / n;
      cost.aborted += c.aborted / n, cost.wasted_s += c.wasted_s / n, cost.goodput += c.goodput / n;
      for (const AcceleratorUtilization& t : run.utilization_by_accelerator) {
        auto same = std::find_if(mean.utilization_by_accelerator.begin(), mean.utilization_by_accelerator.end(),
                                 [&](const AcceleratorUtilization& u) { return u.accelerator == t.accelerator; });
        if (same == mean.utilization_by_accelerator.end()) {
          same = mean.utilization_by_accelerator.insert(mean.utilization_by_accelerator.end(),
                                                        {t.accelerator, t.workers, 0, 0, 0});
        }
        same->min += t.min / n, same->mean += t.mean / n, same->max += t.max / n;
      }
    }
    by_type.push_back(std::move(mean));
    costs.push_back(cost);
  }
  std::string out = accelerator_block(by_type, label_width);
  if (changed) out += world_cost_block(costs, label_width, 1);
  return out;
}

}  // namespace

std::vector<SeedSummary> summarize_seeds(const std::vector<uint64_t>& seeds,
                                         const std::vector<std::vector<RunSummary>>& per_seed) {
  std::vector<std::string> labels;
  for (const auto& table : per_seed) {
    for (const auto& r : table) {
      if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
    }
  }
  std::vector<SeedSummary> out;
  for (const std::string& label : labels) {
    SeedSummary s;
    s.label = label;
    std::vector<double> wall, util, sent, recv, train, eval, at_equal, to_target;
    for (size_t i = 0; i < per_seed.size() && i < seeds.size(); ++i) {
      const auto& table = per_seed[i];
      const auto r = std::find_if(table.begin(), table.end(), [&](const RunSummary& x) { return x.label == label; });
      if (r == table.end()) continue;
      s.policy = r->policy;
      s.seeds.push_back(seeds[i]);
      s.runs.push_back(*r);
      s.timing_only = s.timing_only || r->timing_only;
      s.target_loss = r->target_loss;
      wall.push_back(r->wall_clock_s);
      util.push_back(r->compute_utilization);
      sent.push_back(r->sent_bytes_per_worker);
      recv.push_back(r->recv_bytes_per_worker);
      train.push_back(r->final_train_loss);
      eval.push_back(r->final_eval_loss);
      const std::optional<double> when = equal_time_s(table);
      const std::optional<double> loss = when ? r->eval_loss_at(*when) : std::nullopt;
      at_equal.push_back(loss.value_or(kNaN));
      if (r->time_to_target_s) {
        to_target.push_back(*r->time_to_target_s);
        ++s.reached_target;
      }
    }
    s.wall_clock_s = interval95(wall);
    s.compute_utilization = interval95(util);
    s.sent_bytes_per_worker = interval95(sent);
    s.recv_bytes_per_worker = interval95(recv);
    s.final_train_loss = interval95(train);
    s.final_eval_loss = interval95(eval);
    s.eval_loss_at_equal_time = interval95(at_equal);
    s.time_to_target_s = interval95(to_target);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> indistinguishable(const std::vector<SeedSummary>& rows,
                                                                   Interval SeedSummary::*metric) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t a = 0; a < rows.size(); ++a) {
    for (size_t b = a + 1; b < rows.size(); ++b) {
      const Interval &x = rows[a].*metric, &y = rows[b].*metric;
      if (x.n > 0 && y.n > 0 && overlap(x, y)) pairs.emplace_back(rows[a].label, rows[b].label);
    }
  }
  return pairs;
}

std::string format_seed_table(const std::vector<SeedSummary>& rows) {
  if (rows.empty()) return "";
  std::vector<uint64_t> seeds;  // every seed of the table, in order of first appearance
  for (const auto& r : rows) {
    for (uint64_t s : r.seeds) {
      if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
    }
  }
  const bool timing_only = std::all_of(rows.begin(), rows.end(), [](const SeedSummary& r) { return r.timing_only; });
  const std::optional<double> target = rows.front().target_loss;
  const bool at_equal_time = std::any_of(rows.begin(), rows.end(), [](const SeedSummary& r) {
    return r.eval_loss_at_equal_time.n > 0;
  });
  const SeedSummary* ddp = nullptr;
  for (const auto& r : rows) {
    if (r.policy == "ddp" && !ddp) ddp = &r;
  }
  auto relative = [&](const SeedSummary& r) -> std::string {
    if (!ddp || !(ddp->sent_bytes_per_worker.mean > 0)) return "";
    const double ratio = r.sent_bytes_per_worker.mean / ddp->sent_bytes_per_worker.mean;
    return ratio >= 0.1 ? fmt::format("{:.2f}x", ratio) : fmt::format("1/{:.0f}", 1 / ratio);
  };
  size_t label_width = 6;
  for (const auto& r : rows) label_width = std::max(label_width, r.label.size());

  const int n = static_cast<int>(seeds.size());
  std::string out = fmt::format("{} seed{} ({}): mean", n, n == 1 ? "" : "s", seed_list(seeds));
  if (n > 1) out += fmt::format(" ± half-width of its 95% confidence interval (Student t, {} degrees of freedom)", n - 1);
  out += "\n";
  const char* line = "{:<{}}  {:>16}  {:>8}  {:>10}  {:>8}  {:>15}  {:>15}  {:>19}  {:>15}\n";
  const std::string to = target ? fmt::format("time to {:.2f}", *target) : "";
  out += fmt::format(line, "policy", label_width, "wall-clock", "compute", "MB sent", ddp ? "traffic" : "",
                     "train loss", "eval loss", to, at_equal_time ? "eval loss at" : "");
  out += fmt::format(line, "", label_width, "", "util", "per worker", ddp ? "vs ddp" : "", "", "",
                     target ? "(seeds reaching it)" : "", at_equal_time ? "first finish" : "");
  for (const auto& r : rows) {
    std::string reach;
    if (target) {
      reach = r.reached_target == 0 ? "not reached"
                                    : time_cell(r.time_to_target_s) +
                                          fmt::format(" ({}/{})", r.reached_target, r.seeds.size());
    }
    auto loss = [&](const Interval& i) { return r.timing_only ? std::string("no loss") : cell(i, 3); };
    out += fmt::format(line, r.label, label_width, time_cell(r.wall_clock_s),
                       fmt::format("{:.1f}%", 100 * r.compute_utilization.mean), fmt::format("{:.1f}", r.sent_bytes_per_worker.mean / 1e6),
                       relative(r), loss(r.final_train_loss), loss(r.final_eval_loss), reach,
                       at_equal_time ? loss(r.eval_loss_at_equal_time) : "");
  }
  if (timing_only) {
    out += "timing only (numerics: none): the schedules ran without training; there is no loss to compare\n";
    return out;
  }
  const auto say = [&](const char* what, Interval SeedSummary::*metric) {
    const auto measured = std::count_if(rows.begin(), rows.end(), [&](const SeedSummary& r) { return (r.*metric).n > 0; });
    if (n < 2 || measured < 2) return;  // nothing to compare (one seed; no evaluation yet)
    const auto pairs = indistinguishable(rows, metric);
    if (pairs.empty()) {
      out += fmt::format("{}: no two policies' intervals overlap at {} seeds\n", what, n);
      return;
    }
    std::string list;
    for (const auto& [a, b] : pairs) list += (list.empty() ? "" : ", ") + a + " ~ " + b;
    out += fmt::format("{}: not distinguishable at {} seeds (intervals overlap): {}\n", what, n, list);
  };
  say("eval loss", &SeedSummary::final_eval_loss);
  if (at_equal_time) say("eval loss at first finish", &SeedSummary::eval_loss_at_equal_time);
  return out + means_blocks(rows, label_width);
}

namespace {

// seeds.csv's metrics, in column order: a <name>_mean and a <name>_ci95 column each.
constexpr std::pair<const char*, Interval SeedSummary::*> kCsvMetrics[] = {
    {"wall_clock_s", &SeedSummary::wall_clock_s},
    {"compute_utilization", &SeedSummary::compute_utilization},
    {"sent_bytes_per_worker", &SeedSummary::sent_bytes_per_worker},
    {"recv_bytes_per_worker", &SeedSummary::recv_bytes_per_worker},
    {"final_train_loss", &SeedSummary::final_train_loss},
    {"final_eval_loss", &SeedSummary::final_eval_loss},
    {"eval_loss_at_equal_time", &SeedSummary::eval_loss_at_equal_time},
    {"time_to_target_s", &SeedSummary::time_to_target_s},
};

}  // namespace

std::string seeds_csv_header() {
  std::string header = "label,policy,seeds";
  for (const auto& [name, metric] : kCsvMetrics) header += fmt::format(",{0}_mean,{0}_ci95", name);
  return header + ",target_loss,reached_target";
}

std::string seeds_csv_row(const SeedSummary& r) {
  std::string row = fmt::format("{},{},{}", r.label, r.policy, r.seeds.size());
  for (const auto& [name, metric] : kCsvMetrics) {
    row += "," + csv_number((r.*metric).mean) + "," + csv_number((r.*metric).half_width);
  }
  return row + "," + (r.target_loss ? csv_number(*r.target_loss) : std::string()) + "," +
         std::to_string(r.reached_target);
}

}  // namespace locosim
