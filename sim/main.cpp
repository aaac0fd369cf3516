// locosim: simulate low-communication training methods on a wide-area platform.
//   locosim run scenarios/quickstart.yaml      run every policy (at every sweep point), print the comparison
//   locosim check scenarios/*.yaml             validate only (every sweep point too)
//   locosim report runs/quickstart             print a finished run's table(s)
// Exit codes: 0 done, 1 a run failed, 2 bad input (the message names file:line:column and key),
// 128 + N stopped by signal N (children stopped, unfinished folders removed).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <optional>

#include "config/error.hpp"
#include "config/section.hpp"
#include "models/cpu_kernels.hpp"
#include "report/stop_signals.hpp"
#include "sim/estimate.hpp"
#include "sim/progress.hpp"
#include "sim/report.hpp"
#include "sim/run.hpp"
#include "sim/sweep.hpp"

using namespace locosim;

namespace {


int check(const std::vector<std::string>& files) {
  int code = 0;
  for (const auto& file : files) {
    try {
      Sweep sweep = load_sweep(file);
      const Scenario& s = sweep.points.front().scenario;
      std::printf("ok: %s (%d workers, %zu policies", file.c_str(), s.world_size(), s.policies.size());
      if (!sweep.keys.empty()) std::printf(", %zu sweep points", sweep.points.size());
      std::printf(")\n");
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      code = kExitBadInput;
    } catch (const std::exception& e) {  // a message with no position still names the file, and the next file is checked
      std::fprintf(stderr, "error: %s: %s\n", file.c_str(), e.what());
      code = kExitBadInput;
    }
  }
  return code;
}

// Refuses (exit 2) a run whose estimate exceeds the machine's memory or disk, unless forced; notes
// large runs. Nothing has been written yet.
void check_fits(const Sweep& sweep, const RunOptions& options, bool force) {
  std::vector<RunEstimate> runs;
  for (const SweepPoint& point : sweep.points) {
    for (const PolicySpec* p : selected_policies(point.scenario, options.only_labels)) {
      runs.push_back(estimate_policy_run(point.scenario, *p));
    }
  }
  const std::string note = check_run_fits(runs, effective_jobs(options), machine_room(options.output_root), force);
  if (!note.empty()) std::printf("%s\n", note.c_str());
}

int run(const std::string& file, const RunOptions& options, const std::optional<std::string>& link_bucket,
        bool force) {
  Sweep sweep = load_sweep(file);
  if (link_bucket) {
    std::string why;
    std::optional<double> bucket_s = parse_quantity(*link_bucket, Quantity::duration_s, &why);
    if (!bucket_s || *bucket_s <= 0) throw std::invalid_argument("--link-bucket " + *link_bucket + ": " + (why.empty() ? "must be > 0" : why));
    for (auto& point : sweep.points) point.scenario.link_bucket_s = *bucket_s;
  }
  const Scenario& first = sweep.points.front().scenario;
  check_fits(sweep, options, force);
  std::printf("%s: %d workers, %zu policies, %lld steps each", first.name.c_str(), first.world_size(),
              first.policies.size(), static_cast<long long>(first.train.steps));
  if (!sweep.keys.empty()) std::printf(", %zu sweep points", sweep.points.size());
  std::printf("\n");
  std::fflush(stdout);
  if (sweep.keys.empty()) {
    std::vector<RunSummary> rows = run_scenario(first, options);
    std::printf("\n%s", format_table(rows).c_str());
  } else {
    std::vector<std::vector<RunSummary>> tables = run_sweep(sweep, options);
    for (size_t i = 0; i < tables.size(); ++i) {
      std::printf("\npoint %s\n%s", sweep.points[i].name.c_str(), format_table(tables[i]).c_str());
    }
  }
  std::printf("\nrun folder: %s/%s\n", options.output_root.c_str(), first.name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  pin_cpu_kernels(argv);  // first: the same numbers on every x86-64 machine
  CLI::App app{"locosim: which low-communication training method finishes first, at what loss, on your links"};
  app.require_subcommand(1);

  std::string run_file;
  RunOptions options;
  std::optional<std::string> link_bucket;
  bool no_progress = false, force = false;
  CLI::App* run_cmd = app.add_subcommand("run", "simulate every policy of a scenario and print the comparison");
  run_cmd->add_option("scenario", run_file, "scenario YAML file")->required();
  run_cmd->add_option("-o,--output", options.output_root, "folder for run folders (default: runs)");
  run_cmd->add_option("-p,--policy", options.only_labels, "run only the policy with this label (repeatable)");
  run_cmd->add_option("-j,--jobs", options.jobs, "policies simulated at once (default: one per core)");
  run_cmd->add_option("--link-bucket", link_bucket, "time bucket of links.csv, e.g. '10 s' (default: the scenario's)");
  run_cmd->add_flag("--no-progress", no_progress, "no live progress lines (never shown off a terminal or in CI)");
  run_cmd->add_flag("--force", force, "run even if the estimate says memory or disk will not suffice");

  std::vector<std::string> check_files;
  CLI::App* check_cmd = app.add_subcommand("check", "validate scenario files without running them");
  check_cmd->add_option("scenarios", check_files, "scenario YAML files")->required();

  std::string report_dir;
  CLI::App* report_cmd = app.add_subcommand("report", "print the comparison table of a finished run");
  report_cmd->add_option("run", report_dir, "run folder (runs/<scenario>, a sweep point or a policy folder)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }

  try {
    if (*check_cmd) return check(check_files);
    if (*report_cmd) {
      std::printf("%s", report_run_folder(report_dir).c_str());
      return 0;
    }
    options.live_progress = !no_progress && wants_live_progress();
    return run(run_file, options, link_bucket, force);
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "locosim: %s\n", e.what());
    return 128 + e.signal();
  } catch (const std::exception& e) {
    return report_failure(e, "locosim");
  }
}
