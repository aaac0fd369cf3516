// RunSummary: derivation from recorded rows, JSON and CSV files, the terminal table.
#include "report/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "report/output_file.hpp"

namespace locosim {

namespace {

// Min, mean and max of each accelerator type's workers (and of all workers) from their utilizations.
void set_utilization(RunSummary& s, const std::vector<std::string>& accelerators, const std::vector<double>& used) {
  if (used.empty()) return;
  s.utilization_min = *std::min_element(used.begin(), used.end());
  s.utilization_max = *std::max_element(used.begin(), used.end());
  for (double u : used) s.compute_utilization += u / static_cast<double>(used.size());
  // A mean lies between the least and the most; summed in floating point it can miss by a rounding
  // error (4096 equal workers: 7.8e-16 below the least), which a reader's whiskers would not survive.
  s.compute_utilization = std::clamp(s.compute_utilization, s.utilization_min, s.utilization_max);
  auto& types = s.utilization_by_accelerator;
  for (size_t w = 0; w < used.size(); ++w) {
    auto type = std::find_if(types.begin(), types.end(),
                             [&](const AcceleratorUtilization& t) { return t.accelerator == accelerators[w]; });
    if (type == types.end()) {
      type = types.insert(types.end(), AcceleratorUtilization{accelerators[w], 0, used[w], 0, used[w]});
    }
    type->workers += 1;
    type->min = std::min(type->min, used[w]);
    type->max = std::max(type->max, used[w]);
    type->mean += used[w];
  }
  for (auto& t : types) t.mean = std::clamp(t.mean / t.workers, t.min, t.max);
}

}  // namespace

RunSummary summarize(const Recorder& recorder, const std::vector<std::string>& accelerators,
                     std::optional<double> target_loss) {
  const int workers = static_cast<int>(accelerators.size());
  RunSummary s;
  s.workers = workers;
  s.target_loss = target_loss;
  // The run lasts until its last worker stopped or left: its last metric row, or the end of its last
  // event (a worker lost mid-round records no row for that round, but its work and its absence ran
  // until then).
  std::vector<double> compute_s(workers, 0), end_s(workers, 0);
  for (const auto& e : recorder.events()) {
    if (e.worker >= workers) continue;  // a relay host's own flows (recorded as worker K) are not a worker's
    end_s[e.worker] = std::max(end_s[e.worker], e.end_s);
    if (e.kind == EventKind::compute) compute_s[e.worker] += e.end_s - e.start_s;
    if (e.kind == EventKind::send) s.sent_bytes_per_worker += e.bytes / workers;
    if (e.kind == EventKind::recv) s.recv_bytes_per_worker += e.bytes / workers;
  }
  std::vector<std::vector<const MetricRow*>> by_worker(workers);
  std::map<int64_t, std::vector<const MetricRow*>> evals_by_step;
  std::map<int64_t, Sync> syncs;  // by step: aborted if any member gave it up (members agree)
  for (const auto& m : recorder.metrics()) {
    by_worker[m.worker].push_back(&m);
    end_s[m.worker] = std::max(end_s[m.worker], m.time_s);
    s.steps = std::max(s.steps, m.step);
    if (!std::isnan(m.eval_loss)) evals_by_step[m.step].push_back(&m);
    if (m.sync != Sync::none && syncs[m.step] != Sync::aborted) syncs[m.step] = m.sync;
  }
  for (const auto& [step, sync] : syncs) (sync == Sync::committed ? s.syncs_committed : s.syncs_aborted) += 1;
  s.wall_clock_s = *std::max_element(end_s.begin(), end_s.end());
  std::vector<double> used(workers, 0);  // each worker's compute time / wall-clock
  for (int w = 0; w < workers && s.wall_clock_s > 0; ++w) used[w] = compute_s[w] / s.wall_clock_s;
  set_utilization(s, accelerators, used);
  int finished = 0;
  for (int w = 0; w < workers; ++w) {
    if (!by_worker[w].empty() && by_worker[w].back()->last) ++finished;
  }
  for (int w = 0; w < workers; ++w) {
    const auto& rows = by_worker[w];
    if (rows.empty()) continue;
    s.tokens += rows.back()->tokens;
    if (!rows.back()->last) continue;  // away at the end: no final model
    size_t n = std::min<size_t>(10, rows.size());
    double tail = 0;
    for (size_t i = rows.size() - n; i < rows.size(); ++i) tail += rows[i]->train_loss;
    s.final_train_loss += tail / static_cast<double>(n) / finished;
    s.final_eval_loss += rows.back()->eval_loss / finished;
  }
  // The eval curve: rows in time order (by worker at equal times, as metrics.csv is per worker).
  std::vector<const MetricRow*> evals;
  for (const auto& m : recorder.metrics()) {
    if (!std::isnan(m.eval_loss)) evals.push_back(&m);
  }
  std::stable_sort(evals.begin(), evals.end(), [](const MetricRow* a, const MetricRow* b) {
    return a->time_s != b->time_s ? a->time_s < b->time_s : a->worker < b->worker;
  });
  // Workers that never evaluate (lost before their first evaluation) are left out of it.
  std::vector<double> latest(workers, std::numeric_limits<double>::quiet_NaN());
  std::set<int> evaluators;
  for (const MetricRow* r : evals) evaluators.insert(r->worker);
  size_t evaluated = 0;
  for (size_t i = 0; i < evals.size(); ++i) {
    if (std::isnan(latest[evals[i]->worker])) ++evaluated;
    latest[evals[i]->worker] = evals[i]->eval_loss;
    const bool last_at_this_time = i + 1 == evals.size() || evals[i + 1]->time_s != evals[i]->time_s;
    if (evaluated < evaluators.size() || !last_at_this_time) continue;
    double mean = 0;
    for (double l : latest) {
      if (!std::isnan(l)) mean += l / static_cast<double>(evaluated);
    }
    s.eval_curve.emplace_back(evals[i]->time_s, mean);
  }
  if (target_loss) {
    // The first evaluation step at which the workers evaluated there average to the target.
    for (const auto& [step, rows] : evals_by_step) {
      const double n = static_cast<double>(rows.size());
      double mean = 0, when = 0;
      for (const MetricRow* r : rows) mean += r->eval_loss / n, when = std::max(when, r->time_s);
      if (mean <= *target_loss) {
        s.time_to_target_s = when;
        break;
      }
    }
  }
  return s;
}

std::optional<double> RunSummary::eval_loss_at(double time_s) const {
  std::optional<double> loss;
  for (const auto& [t, l] : eval_curve) {
    if (t > time_s * (1 + 1e-12)) break;
    loss = l;
  }
  return loss;
}

void set_staleness(RunSummary& s, const std::vector<ServerUpdate>& updates) {
  if (updates.empty()) return;
  int64_t total = 0, most = 0;
  for (const ServerUpdate& u : updates) {
    total += u.staleness;
    most = std::max(most, u.staleness);
  }
  s.pushes_applied = static_cast<int64_t>(updates.size());
  s.staleness_mean = static_cast<double>(total) / static_cast<double>(updates.size());
  s.staleness_max = most;
}

void set_goodput(RunSummary& s) {
  s.goodput_tokens_per_s = s.wall_clock_s > 0 ? static_cast<double>(s.useful_tokens) / s.wall_clock_s : 0;
}

namespace {

template <class T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

template <class T = double>
std::optional<T> optional_from(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<T>(j.get<T>());
}

// A loss, or null where there is none (a timing-only run): JSON has no NaN.
nlohmann::json loss_json(double loss) { return std::isnan(loss) ? nlohmann::json() : nlohmann::json(loss); }
double loss_from(const nlohmann::json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

}  // namespace

std::string params_fingerprint(const std::vector<torch::Tensor>& params) {
  uint64_t hash = 1469598103934665603ULL;
  for (const auto& p : params) {
    torch::Tensor t = p.detach().contiguous().cpu();
    const auto* bytes = static_cast<const uint8_t*>(t.data_ptr());
    for (size_t i = 0; i < t.nbytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  }
  return fmt::format("{:016x}", hash);
}

void write_summary_json(const RunSummary& s, const std::string& path) {
  nlohmann::json by_accelerator = nlohmann::json::array();
  for (const auto& t : s.utilization_by_accelerator) {
    by_accelerator.push_back(
        {{"accelerator", t.accelerator}, {"workers", t.workers}, {"min", t.min}, {"mean", t.mean}, {"max", t.max}});
  }
  nlohmann::json j = {{"label", s.label},
                      {"policy", s.policy},
                      {"workers", s.workers},
                      {"steps", s.steps},
                      {"tokens", s.tokens},
                      {"wall_clock_s", s.wall_clock_s},
                      {"compute_utilization", s.compute_utilization},
                      {"utilization_min", s.utilization_min},
                      {"utilization_max", s.utilization_max},
                      {"utilization_by_accelerator", by_accelerator},
                      {"sent_bytes_per_worker", s.sent_bytes_per_worker},
                      {"recv_bytes_per_worker", s.recv_bytes_per_worker},
                      {"numerics", s.timing_only ? "none" : "full"},
                      {"final_train_loss", loss_json(s.final_train_loss)},
                      {"final_eval_loss", loss_json(s.final_eval_loss)},
                      {"target_loss", optional_json(s.target_loss)},
                      {"time_to_target_s", optional_json(s.time_to_target_s)},
                      {"params_fingerprint", s.params_fingerprint},
                      {"eval_curve", s.eval_curve},
                      {"workers_lost", s.workers_lost},
                      {"workers_joined", s.workers_joined},
                      {"syncs_committed", s.syncs_committed},
                      {"syncs_aborted", s.syncs_aborted},
                      {"compute_wasted_s", s.compute_wasted_s},
                      {"useful_tokens", s.useful_tokens},
                      {"goodput_tokens_per_s", s.goodput_tokens_per_s},
                      {"pushes_applied", optional_json(s.pushes_applied)},
                      {"staleness_mean", optional_json(s.staleness_mean)},
                      {"staleness_max", optional_json(s.staleness_max)}};
  // Only where there is one: every other run's summary.json stays as it was.
  if (s.final_validation_loss) j["final_validation_loss"] = *s.final_validation_loss;
  write_text_file(path, j.dump(2) + "\n");
}

RunSummary read_summary_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    RunSummary s;
    s.label = j.at("label");
    s.policy = j.at("policy");
    s.workers = j.at("workers");
    s.steps = j.at("steps");
    s.tokens = j.at("tokens");
    s.wall_clock_s = j.at("wall_clock_s");
    s.compute_utilization = j.at("compute_utilization");
    s.utilization_min = j.value("utilization_min", 0.0);  // absent before locosim recorded the spread
    s.utilization_max = j.value("utilization_max", 0.0);
    for (const auto& t : j.value("utilization_by_accelerator", nlohmann::json::array())) {
      s.utilization_by_accelerator.push_back({t.at("accelerator").get<std::string>(), t.at("workers").get<int>(),
                                              t.at("min").get<double>(), t.at("mean").get<double>(),
                                              t.at("max").get<double>()});
    }
    s.sent_bytes_per_worker = j.at("sent_bytes_per_worker");
    s.recv_bytes_per_worker = j.at("recv_bytes_per_worker");
    s.timing_only = j.value("numerics", "full") == "none";  // absent before timing-only runs
    s.final_train_loss = loss_from(j.at("final_train_loss"));
    s.final_eval_loss = loss_from(j.at("final_eval_loss"));
    s.final_validation_loss = optional_from(j.value("final_validation_loss", nlohmann::json()));
    s.target_loss = optional_from(j.at("target_loss"));
    s.time_to_target_s = optional_from(j.at("time_to_target_s"));
    s.params_fingerprint = j.value("params_fingerprint", "");
    s.eval_curve = j.value("eval_curve", std::vector<std::pair<double, double>>{});
    s.workers_lost = j.value("workers_lost", 0);
    s.workers_joined = j.value("workers_joined", 0);
    s.syncs_committed = j.value("syncs_committed", int64_t{0});
    s.syncs_aborted = j.value("syncs_aborted", int64_t{0});
    s.compute_wasted_s = j.value("compute_wasted_s", 0.0);
    s.useful_tokens = j.value("useful_tokens", int64_t{0});
    s.goodput_tokens_per_s = j.value("goodput_tokens_per_s", 0.0);
    s.pushes_applied = optional_from<int64_t>(j.value("pushes_applied", nlohmann::json()));  // absent before them
    s.staleness_mean = optional_from(j.value("staleness_mean", nlohmann::json()));
    s.staleness_max = optional_from<int64_t>(j.value("staleness_max", nlohmann::json()));
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a locosim summary: " + e.what());
  }
}

void write_summary_csv(const std::vector<RunSummary>& rows, const std::string& path) {
  OutputFile file(path);
  std::ostream& out = file.out();
  out << "label,policy,workers,steps,tokens,wall_clock_s,compute_utilization,utilization_min,utilization_max,"
         "sent_bytes_per_worker,recv_bytes_per_worker,final_train_loss,final_eval_loss,target_loss,time_to_target_s,"
         "workers_lost,workers_joined,syncs_committed,syncs_aborted,compute_wasted_s,useful_tokens,"
         "goodput_tokens_per_s\n";
  auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{:.9g}", *v) : std::string(); };
  auto loss = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.6f}", v); };
  for (const auto& r : rows) {
    // Empty where unknown (a summary.json from before the spread was recorded), as pandas' NaN.
    auto spread = [&](double v) { return r.utilization_spread_known() ? fmt::format("{:.6f}", v) : std::string(); };
    out << fmt::format("{},{},{},{},{},{:.9g},{:.6f},{},{},", r.label, r.policy, r.workers, r.steps, r.tokens,
                       r.wall_clock_s, r.compute_utilization, spread(r.utilization_min), spread(r.utilization_max));
    out << fmt::format("{:.9g},{:.9g},{},{},{},{},", r.sent_bytes_per_worker, r.recv_bytes_per_worker,
                       loss(r.final_train_loss), loss(r.final_eval_loss), opt(r.target_loss), opt(r.time_to_target_s));
    out << fmt::format("{},{},{},{},{:.9g},{},{:.9g}\n", r.workers_lost, r.workers_joined, r.syncs_committed,
                       r.syncs_aborted, r.compute_wasted_s, r.useful_tokens, r.goodput_tokens_per_s);
  }
  file.close();
}

std::string human_time(double s) {
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.2f} h", s / 3600);
}

std::optional<double> equal_time_s(const std::vector<RunSummary>& rows) {
  if (rows.size() < 2) return std::nullopt;
  if (std::any_of(rows.begin(), rows.end(), [](const RunSummary& r) { return r.eval_curve.empty(); })) {
    return std::nullopt;
  }
  double first_done_s = rows.front().wall_clock_s;
  for (const auto& r : rows) first_done_s = std::min(first_done_s, r.wall_clock_s);
  return first_done_s;
}

namespace {

// "74.2% (48-99)": the mean, then the least and most used worker in whole percent where they differ.
std::string utilization_cell(double mean, double min, double max, bool spread_known) {
  const std::string lo = fmt::format("{:.0f}", 100 * min), hi = fmt::format("{:.0f}", 100 * max);
  return fmt::format("{:.1f}%", 100 * mean) + (spread_known && lo != hi ? " (" + lo + "-" + hi + ")" : "");
}

}  // namespace

std::string accelerator_block(const std::vector<RunSummary>& rows, size_t label_width) {
  std::vector<AcceleratorUtilization> types;  // name and worker count, from the first row that has the type
  for (const auto& r : rows) {
    for (const auto& t : r.utilization_by_accelerator) {
      auto same = [&](const AcceleratorUtilization& u) { return u.accelerator == t.accelerator; };
      if (std::none_of(types.begin(), types.end(), same)) types.push_back(t);
    }
  }
  if (types.size() < 2) return "";
  std::string names = fmt::format("{:<{}}", "policy", label_width), counts = fmt::format("{:<{}}", "", label_width);
  std::vector<size_t> widths;
  for (const auto& t : types) {
    const std::string name = t.accelerator + " util";
    const std::string count = fmt::format("({} worker{})", t.workers, t.workers == 1 ? "" : "s");
    widths.push_back(std::max({size_t{14}, name.size(), count.size()}));
    names += fmt::format("  {:>{}}", name, widths.back());
    counts += fmt::format("  {:>{}}", count, widths.back());
  }
  std::string out = "\n" + names + "\n" + counts + "\n";
  for (const auto& r : rows) {
    out += fmt::format("{:<{}}", r.label, label_width);
    for (size_t i = 0; i < types.size(); ++i) {
      std::string cell;
      for (const auto& t : r.utilization_by_accelerator) {
        if (t.accelerator == types[i].accelerator) cell = utilization_cell(t.mean, t.min, t.max, true);
      }
      out += fmt::format("  {:>{}}", cell, widths[i]);
    }
    out += "\n";
  }
  return out;
}


std::string format_table(const std::vector<RunSummary>& unsorted) {
  // With a target loss, rows rank by time to reach it (those that never do come last, as listed).
  std::vector<RunSummary> rows = unsorted;
  const bool has_target = !rows.empty() && rows[0].target_loss.has_value();
  if (has_target) {
    std::stable_sort(rows.begin(), rows.end(), [](const RunSummary& a, const RunSummary& b) {
      if (a.time_to_target_s.has_value() != b.time_to_target_s.has_value()) return a.time_to_target_s.has_value();
      return a.time_to_target_s.value_or(0) < b.time_to_target_s.value_or(0);
    });
  }
  // Traffic relative to DDP (the first ddp row), when the comparison has one.
  const RunSummary* ddp = nullptr;
  for (const auto& r : unsorted) {
    if (r.policy == "ddp" && !ddp) ddp = &r;
  }
  auto relative = [&](const RunSummary& r) -> std::string {
    if (!ddp || ddp->sent_bytes_per_worker <= 0) return "";
    const double ratio = r.sent_bytes_per_worker / ddp->sent_bytes_per_worker;
    return ratio >= 0.1 ? fmt::format("{:.2f}x", ratio) : fmt::format("1/{:.0f}", 1 / ratio);
  };
  size_t label_width = 6;
  for (const auto& r : rows) label_width = std::max(label_width, r.label.size());
  const std::string target = has_target ? fmt::format("to {:.2f}", *rows[0].target_loss) : "";
  // Loss at equal wall-clock: every policy's eval curve read when the first one finished.
  const std::optional<double> equal_s = equal_time_s(rows);
  const bool at_equal_time = equal_s.has_value();
  const double first_done_s = equal_s.value_or(0);
  const char* line = "{:<{}}  {:>10}  {:>14}  {:>12}  {:>12}  {:>8}  {:>10}  {:>9}  {:>11}  {:>10}\n";
  std::string out = fmt::format(line, "policy", label_width, "wall-clock", "compute util", "MB sent", "MB recv",
                                ddp ? "traffic" : "", "train loss", "eval loss", has_target ? "time " + target : "",
                                at_equal_time ? "eval loss" : "");
  out += fmt::format(line, "", label_width, "", "mean (min-max)", "per worker", "per worker", ddp ? "vs ddp" : "", "",
                     "", "", at_equal_time ? "at " + human_time(first_done_s) : "");
  for (const auto& r : rows) {
    std::string to_target = !has_target ? "" : r.time_to_target_s ? human_time(*r.time_to_target_s) : "not reached";
    const std::optional<double> at = at_equal_time ? r.eval_loss_at(first_done_s) : std::nullopt;
    auto loss = [&](double v) { return r.timing_only ? std::string("no loss") : fmt::format("{:.3f}", v); };
    out += fmt::format("{:<{}}  {:>10}  {:>14}  {:>12.1f}  {:>12.1f}  {:>8}  {:>10}  {:>9}  {:>11}  {:>10}\n",
                       r.label, label_width, human_time(r.wall_clock_s),
                       utilization_cell(r.compute_utilization, r.utilization_min, r.utilization_max,
                                        r.utilization_spread_known()),
                       r.sent_bytes_per_worker / 1e6, r.recv_bytes_per_worker / 1e6, relative(r),
                       loss(r.final_train_loss), loss(r.final_eval_loss), to_target,
                       at ? fmt::format("{:.3f}", *at) : at_equal_time ? "-" : "");
  }
  if (std::any_of(rows.begin(), rows.end(), [](const RunSummary& r) { return r.timing_only; })) {
    out += "timing only (numerics: none): the schedules ran without training; there is no loss to compare\n";
  }
  out += accelerator_block(rows, label_width);
  // On a changing world, a second block: what the changes cost each policy.
  if (std::any_of(rows.begin(), rows.end(), [](const RunSummary& r) { return r.world_changed(); })) {
    std::vector<WorldCost> costs;
    for (const auto& r : rows) costs.push_back(world_cost(r));
    out += world_cost_block(costs, label_width, 0);
  }
  return out;
}

WorldCost world_cost(const RunSummary& r) {
  return {r.label,
          static_cast<double>(r.workers_lost),
          static_cast<double>(r.workers_joined),
          static_cast<double>(r.syncs_committed),
          static_cast<double>(r.syncs_aborted),
          r.compute_wasted_s,
          r.goodput_tokens_per_s};
}

std::string world_cost_block(const std::vector<WorldCost>& rows, size_t label_width, int count_decimals) {
  const char* churn_line = "{:<{}}  {:>6}  {:>6}  {:>9}  {:>7}  {:>14}  {:>12}\n";
  std::string out = "\n" + fmt::format(churn_line, "policy", label_width, "lost", "joined", "syncs", "aborted",
                                       "compute wasted", "goodput");
  out += fmt::format(churn_line, "", label_width, "", "", "committed", "", "(all workers)", "tokens/s");
  const auto count = [&](double v) { return fmt::format("{:.{}f}", v, count_decimals); };
  for (const auto& r : rows) {
    out += fmt::format(churn_line, r.label, label_width, count(r.lost), count(r.joined), count(r.committed),
                       count(r.aborted), human_time(r.wasted_s), fmt::format("{:.0f}", r.goodput));
  }
  return out;
}

}  // namespace locosim
