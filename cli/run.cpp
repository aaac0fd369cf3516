// plan_runs and merge_runs: which runs a sweep has and which are finished, then the summary files of
// the finished ones (cli/report.cpp reads them back). run_planned, between them: cli/run_planned.cpp.
#include "cli/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "algorithms/policies.hpp"
#include "config/error.hpp"
#include "report/csv_field.hpp"
#include "report/output_file.hpp"
#include "report/recorder_csv.hpp"
#include "report/run_folder.hpp"
#include "report/tuning.hpp"
#include "report/resume.hpp"
#include "report/run_files.hpp"
#include "sim/world.hpp"

namespace locosim {
namespace fs = std::filesystem;

namespace {

// `write` writes a temporary file (named for this process: shards may merge at once) that is then
// renamed to `path`.
void write_atomically(const fs::path& path, const std::function<void(const std::string&)>& write) {
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + "." + std::to_string(getpid()) + ".tmp");
  write(tmp.string());
  fs::rename(tmp, path);
}

// In progress lines and lists of missing runs: the label, or point/label.
std::string run_name(const SweepPoint& point, const std::string& label) {
  return point.name.empty() ? label : point.name + "/" + label;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path point_folder(const fs::path& root, const SweepPoint& point) {
  return point.name.empty() ? root : child_path(root, point.name);
}

// At several seeds: each grid point's policies over its seeds, into merged.seed_groups (the selected
// ones) and seeds.csv (all of them; a sweep's point and key columns first, as in summary.csv). With
// tune: grids, also tuned.csv: the point each entry is compared at.
void merge_seeds(const Sweep& sweep, const std::vector<std::vector<RunSummary>>& finished, const fs::path& root,
                 Merged& merged) {
  std::vector<std::string> groups;  // grid points in order
  for (const SweepPoint& p : sweep.points) {
    if (std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  }
  std::ostringstream csv;
  const std::vector<std::string> keys(sweep.keys.begin(), sweep.keys.end() - 1);  // without "seed"
  if (!keys.empty()) {
    csv << "point";
    for (const auto& key : keys) csv << ',' << csv_field(key);
    csv << ',';
  }
  std::ostringstream tuned;
  tuned << csv.str() << tuned_csv_header() << '\n';
  csv << seeds_csv_header() << '\n';
  bool any = false, any_tuned = false;
  for (const std::string& group : groups) {
    std::vector<uint64_t> seeds;
    std::vector<std::vector<RunSummary>> all, selected;
    const SweepPoint* first = nullptr;
    for (size_t i = 0; i < sweep.points.size(); ++i) {
      if (sweep.points[i].group != group) continue;
      first = first ? first : &sweep.points[i];
      seeds.push_back(sweep.points[i].seed);
      all.push_back(finished[i]);
      selected.push_back(merged.tables[i]);
    }
    merged.seed_groups.push_back({group, summarize_seeds(seeds, selected), seeds, selected});
    std::string point_cells;
    if (!keys.empty()) {
      point_cells = csv_field(group);
      for (size_t k = 0; k < keys.size(); ++k) point_cells += ',' + csv_field(first->values[k].second);
      point_cells += ',';
    }
    for (const SeedSummary& row : summarize_seeds(seeds, all)) {
      csv << point_cells << seeds_csv_row(row) << '\n';
      any = true;
    }
    for (const TuneChoice& choice : tune_choices(first->scenario, all)) {
      tuned << point_cells << tuned_csv_row(choice) << '\n';
      any_tuned = true;
    }
  }
  if (any) write_atomically(root / "seeds.csv", [&](const std::string& tmp) { write_text_file(tmp, csv.str()); });
  if (any_tuned) write_atomically(root / "tuned.csv", [&](const std::string& tmp) { write_text_file(tmp, tuned.str()); });
}

}  // namespace

RunShard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(part);
  };
  const int index = slash == std::string::npos ? -1 : number(text.substr(0, slash));
  const int count = slash == std::string::npos ? -1 : number(text.substr(slash + 1));
  if (index < 0 || count < 1 || index >= count) {
    throw std::invalid_argument("--shard " + text + ": write i/n with 0 <= i < n, e.g. 0/4 (the first of four parts)");
  }
  return {index, count};
}

std::vector<const PolicySpec*> selected_policies(const Scenario& scenario, const std::vector<std::string>& only) {
  std::vector<const PolicySpec*> chosen;
  for (const auto& p : scenario.policies) {
    if (only.empty() || std::find(only.begin(), only.end(), p.label) != only.end()) chosen.push_back(&p);
  }
  for (const auto& label : only) {
    bool known = std::any_of(scenario.policies.begin(), scenario.policies.end(),
                             [&](const PolicySpec& p) { return p.label == label; });
    if (!known) throw std::invalid_argument("--policy " + label + ": no policy with that label in " + scenario.file);
  }
  return chosen;
}

int effective_jobs(const RunOptions& options) {
  return options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<PlannedRun> plan_runs(const Sweep& sweep, const RunOptions& options) {
  std::vector<PlannedRun> all;  // the whole plan: re-timing looks at the other shards' runs too
  if (sweep.points.empty()) return all;
  const fs::path root = child_path(options.output_root, sweep.points.front().scenario.name);
  for (const SweepPoint& point : sweep.points) {
    const fs::path folder = point_folder(root, point);
    for (const PolicySpec* p : selected_policies(point.scenario, options.only_labels)) {
      PlannedRun run{&point, p, child_path(folder, p->label), run_name(point, p->label), run_hash(point.scenario, *p)};
      run.finished = is_finished_run(run.dir, run.hash);
      all.push_back(std::move(run));
    }
  }
  const auto mine = [&](size_t position) {
    return position % static_cast<size_t>(options.shard.count) == static_cast<size_t>(options.shard.index);
  };
  if (options.retime) {
    // A run is re-timed from the plan's first run with its numerics when that one has finished (in
    // any shard, earlier), else from the first of them in this shard's part, which then trains.
    std::map<std::string, const PlannedRun*> first, first_here;  // by numerics hash
    for (size_t i = 0; i < all.size(); ++i) {
      PlannedRun& run = all[i];
      const Scenario& s = run.point->scenario;
      if (s.timing_only || reads_clock(*run.policy) || world_can_fail(s.world)) continue;
      const std::string numerics = numerics_hash(s, *run.policy);
      const auto [earliest, fresh] = first.emplace(numerics, &run);
      if (!mine(i)) continue;
      const PlannedRun* from = !fresh && earliest->second->finished ? earliest->second : nullptr;
      if (!from) {
        const auto [here, fresh_here] = first_here.emplace(numerics, &run);
        if (!fresh_here) from = here->second;
      }
      if (from) run.retime_from = PlannedRun::Reference{from->dir, from->hash, from->name};
    }
  }
  std::vector<PlannedRun> plan;
  for (size_t i = 0; i < all.size(); ++i) {
    if (mine(i)) plan.push_back(std::move(all[i]));
  }
  return plan;
}

namespace {

// When the workers evaluated at the first step whose mean eval loss reaches `target` (summarize()'s rule),
// from metrics.csv (time_s,worker,step,tokens,train_loss,eval_loss,...): times to 9 digits and losses to 6,
// as it prints them (the tables print fewer).
std::optional<double> time_to_target_s(const fs::path& metrics_csv, double target) {
  std::ifstream in(metrics_csv);
  std::string line;
  std::getline(in, line);
  std::map<int64_t, std::tuple<double, int, double>> evals;  // step: (sum of losses, workers, latest time)
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    if (fields.size() < 6 || fields[5].empty()) continue;
    auto& [sum, workers, when] = evals[std::stoll(fields[2])];
    sum += std::stod(fields[5]);
    ++workers;
    when = std::max(when, std::stod(fields[0]));
  }
  for (const auto& [step, e] : evals) {
    if (std::get<0>(e) / std::get<1>(e) <= target) return std::get<2>(e);
  }
  return std::nullopt;
}

// A finished run's summary for the scenario's train.target_loss, which the run hash leaves out: one that
// ran with another target gets its summary.json re-derived and its resolved.yaml the scenario's, in its
// folder, without simulating anything.
RunSummary retargeted_summary(const fs::path& dir, const Scenario& scenario, const PolicySpec& policy) {
  RunSummary summary = read_summary_json((dir / "summary.json").string());
  if (summary.target_loss == scenario.train.target_loss) return summary;
  summary.target_loss = scenario.train.target_loss;
  summary.time_to_target_s = std::nullopt;
  if (summary.target_loss && !summary.timing_only) summary.time_to_target_s = time_to_target_s(dir / "metrics.csv", *summary.target_loss);
  replace_committed_file(dir, "summary.json", [&](const std::string& path) { write_summary_json(summary, path); });
  std::ifstream old_resolved(dir / "resolved.yaml");
  std::string heading;  // "# locosim run of policy 'x'" (or locosim-real's)
  std::getline(old_resolved, heading);
  if (heading.rfind("# ", 0) != 0) heading = run_identity_header("locosim", policy.label);
  replace_committed_file(dir, "resolved.yaml",
                         [&](const std::string& path) { write_text_file(path, resolved_file_text(heading, scenario)); });
  return summary;
}

}  // namespace

Merged merge_runs(const Sweep& sweep, const RunOptions& options) {
  Merged merged;
  if (sweep.points.empty()) return merged;
  const fs::path root = child_path(options.output_root, sweep.points.front().scenario.name);
  std::ostringstream grid;
  std::vector<std::vector<RunSummary>> finished;  // per point: every policy with a finished run
  for (const SweepPoint& point : sweep.points) {
    const fs::path folder = point_folder(root, point);
    std::vector<RunSummary>& rows = finished.emplace_back();  // in scenario order
    merged.tables.emplace_back();
    const std::vector<const PolicySpec*> selected = selected_policies(point.scenario, options.only_labels);
    for (const PolicySpec& p : point.scenario.policies) {
      const fs::path dir = child_path(folder, p.label);
      const bool wanted = std::find(selected.begin(), selected.end(), &p) != selected.end();
      if (!is_finished_run(dir, run_hash(point.scenario, p))) {
        if (wanted) merged.missing.push_back(run_name(point, p.label));
        continue;
      }
      rows.push_back(retargeted_summary(dir, point.scenario, p));
      if (wanted) merged.tables.back().push_back(rows.back());
    }
    if (!is_locosim_folder(folder)) continue;  // nothing ran here yet
    const fs::path csv = folder / "summary.csv";
    write_atomically(csv, [&](const std::string& tmp) { write_summary_csv(rows, tmp); });
    if (point.name.empty()) break;  // no sweep: the scenario's summary.csv is the whole result
    std::istringstream in(read_file(csv));
    std::string line;
    std::getline(in, line);  // the header
    if (grid.tellp() == 0) {
      grid << "point";
      for (const auto& key : sweep.keys) grid << ',' << csv_field(key);
      grid << ',' << line << '\n';
    }
    while (std::getline(in, line)) {
      grid << csv_field(point.name);
      for (const auto& kv : point.values) grid << ',' << csv_field(kv.second);
      grid << ',' << line << '\n';
    }
  }
  if (grid.tellp() > 0) {
    write_atomically(root / "summary.csv", [&](const std::string& tmp) { write_text_file(tmp, grid.str()); });
  }
  if (sweep.seeded) merge_seeds(sweep, finished, root, merged);
  return merged;
}

Merged run_sweep(const Sweep& sweep, const RunOptions& options) {
  run_planned(plan_runs(sweep, options), options);
  return merge_runs(sweep, options);
}

}  // namespace locosim
