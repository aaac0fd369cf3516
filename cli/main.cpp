// locosim: simulate low-communication training methods on a wide-area platform.
//   locosim run scenarios/quickstart.yaml      run every policy (at every sweep point), print the comparison
//   locosim check scenarios/*.yaml             validate only (every sweep point too)
//   locosim check s.yaml --explain             per policy: collective, step compute, bytes per sync, times
//   locosim run s.yaml --set train.steps=50    what if: a value in place of the file's (run, check, submit, merge)
//   locosim compare runs/a runs/b              two runs' tables side by side, with the change
//   locosim report runs/quickstart             print a finished run's table(s)
//   locosim report runs/quickstart --html      the table and figures as one page, runs/quickstart/report.html
//   locosim plot runs/quickstart               the figures, into runs/quickstart/figures
//   locosim run s.yaml --shard 2/8             run one part of a sweep (another machine runs another)
//   locosim merge s.yaml                       assemble the summaries from the finished runs
//   locosim submit s.yaml                      run a sweep as a SLURM job array, then merge
//   locosim accelerators                       the built-in accelerators a host may name, with their sources
//   locosim policies                           the registered policies and their traits
// A run already finished (its folder holds the same scenario hash) is not computed again (--force).
// Exit codes: 0 done, 1 a run failed, 2 bad input (the message names file:line:column and key),
// 128 + N stopped by signal N (children stopped, unfinished folders removed).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "algorithms/policy_registry.hpp"
#include "config/accelerator_catalog.hpp"
#include "config/cli_options.hpp"
#include "config/error.hpp"
#include "config/section.hpp"
#include "models/cpu_kernels.hpp"
#include "report/resume.hpp"
#include "report/run_folder.hpp"
#include "report/seed_table.hpp"
#include "report/tuning.hpp"
#include "report/stop_signals.hpp"
#include "cli/compare.hpp"
#include "cli/estimate.hpp"
#include "cli/explain.hpp"
#include "cli/progress.hpp"
#include "cli/report.hpp"
#include "cli/run.hpp"
#include "cli/slurm.hpp"
#include "cli/sweep.hpp"

using namespace locosim;

namespace {


// "1 worker", "3 workers".
std::string counted(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// The --set options, read. Throws std::invalid_argument naming one without '=' or key.
std::vector<Override> parse_overrides(const std::vector<std::string>& texts) {
  std::vector<Override> out;
  for (const auto& text : texts) out.push_back(parse_override(text));
  return out;
}

// check --explain: each policy of the scenario (a sweep's first point) as it will run. A probe that fails
// is no bad input: exit 1.
int explain(const Sweep& sweep) {
  const Scenario& s = sweep.points.front().scenario;
  if (sweep.points.size() > 1) std::printf("  the first of %zu sweep points, %s:\n", sweep.points.size(), sweep.points.front().name.c_str());
  std::vector<PolicyExplanation> policies;
  try {
    for (const PolicySpec& policy : s.policies) policies.push_back(explain_policy(s, policy));
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "locosim: %s\n", e.what());
    return 1;
  }
  std::printf("%s", format_explanations(s, policies, effective_jobs(RunOptions{})).c_str());
  return 0;
}

int check(const std::vector<std::string>& files, const std::vector<Override>& overrides, bool explained) {
  int code = 0;
  for (const auto& file : files) {
    try {
      Sweep sweep = load_sweep(file, std::nullopt, overrides);
      const Scenario& s = sweep.points.front().scenario;
      std::printf("ok: %s (%s, %s", file.c_str(), counted(s.world_size(), "worker", "workers").c_str(),
                  counted(s.policies.size(), "policy", "policies").c_str());
      const size_t seeds = sweep.seeded ? sweep.seeds.size() : 1;
      if (sweep.keys.size() > (sweep.seeded ? 1u : 0u)) std::printf(", %zu sweep points", sweep.points.size() / seeds);
      if (sweep.seeded) std::printf(", %zu seeds", seeds);
      std::printf(")\n");
      if (explained) code = std::max(code, explain(sweep));
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

// `locosim plot` and `locosim report --html`: this process becomes the system Python on the source tree's
// scripts/plot_run.py (its figures are notebooks/figures.py's, which the notebooks draw too). The script
// says when RUN is no run folder (exit 2) or matplotlib is missing (exit 1).
int run_plot_script(std::vector<std::string> args) {
  const std::string python = "/usr/bin/python3";
  const std::string script = std::string(LOCOSIM_SOURCE_DIR) + "/scripts/plot_run.py";
  if (access(python.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "error: plotting needs %s with matplotlib: run scripts/install-deps.sh\n", python.c_str());
    return 1;
  }
  if (access(script.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "error: plotting needs locosim's source tree: %s: %s\n", script.c_str(), std::strerror(errno));
    return 1;
  }
  args.insert(args.begin(), {python, script});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(python.c_str(), argv.data());
  std::fprintf(stderr, "error: cannot run %s: %s\n", python.c_str(), std::strerror(errno));
  return 1;
}

// Refuses (exit 2) a run whose estimate exceeds the machine's memory or disk, unless forced; notes
// large runs. Nothing has been written yet. Returns the estimates of the runs to compute.
std::vector<RunEstimate> check_fits(const std::vector<PlannedRun>& plan, const RunOptions& options, bool force) {
  std::vector<RunEstimate> runs;
  for (const PlannedRun& run : plan) {
    if (!options.recompute && run.finished) continue;
    Scenario scenario = run.point->scenario;
    scenario.timing_only = scenario.timing_only || run.retime_from.has_value();  // a re-timed run does no training
    runs.push_back(estimate_policy_run(scenario, *run.policy));
  }
  const std::string note = check_run_fits(runs, effective_jobs(options), machine_room(options.output_root), force);
  if (!note.empty()) std::printf("%s\n", note.c_str());
  return runs;
}

// --link-bucket, within the bounds of report.link_bucket in a file.
std::optional<double> parse_link_bucket(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::string why;
  const std::optional<double> bucket_s = parse_quantity(*text, Quantity::duration_s, &why);
  if (!bucket_s) throw std::invalid_argument("--link-bucket " + *text + ": " + why);
  const Range bounds = Range::closed(kMinLinkBucketS, kMaxLinkBucketS);
  if (!bounds.contains(*bucket_s)) {
    throw std::invalid_argument("--link-bucket " + *text + ": must be " + bounds.describe() + " s");
  }
  return bucket_s;
}

Sweep load_for_run(const std::string& file, std::optional<double> link_bucket_s, const RunOptions& options) {
  Sweep sweep = load_sweep(file, options.seeds, parse_overrides(options.overrides));
  if (link_bucket_s) {
    for (auto& point : sweep.points) point.scenario.link_bucket_s = *link_bucket_s;
  }
  return sweep;
}

// -o names a folder that can be made or written; checked before anything is read or written.
void check_output_root(const std::string& path) {
  const std::string problem = output_root_problem(path);
  if (!problem.empty()) throw std::invalid_argument("-o/--output: " + problem);
}

// A run folder that says it finished but lost or truncated a file is computed again: say which, and why.
void note_damaged(const std::vector<PlannedRun>& plan) {
  constexpr size_t kShown = 10;
  size_t damaged = 0;
  for (const PlannedRun& run : plan) {
    if (run.finished) continue;
    const std::string problem = damaged_run_problem(run.dir, run.hash);
    if (problem.empty()) continue;
    if (++damaged <= kShown) {
      std::printf("%s finished earlier, but %s: computed again\n", run.dir.c_str(), problem.c_str());
    }
  }
  if (damaged > kShown) std::printf("... and %zu more damaged run folders, computed again\n", damaged - kShown);
}

// After a failure or an interruption: the sweep points' folders (and the scenario's) that no run
// has written into are removed, so that a large sweep stopped early does not leave a folder per point.
void remove_unused_folders(const std::vector<PlannedRun>& plan, const std::filesystem::path& root) {
  std::vector<std::filesystem::path> points;
  for (const PlannedRun& run : plan) {
    const std::filesystem::path point = run.dir.parent_path();
    if (std::find(points.begin(), points.end(), point) == points.end()) points.push_back(point);
  }
  for (const auto& point : points) remove_if_unused(point);
  remove_if_unused(root);
}

void print_tables(const Sweep& sweep, const Merged& merged) {
  if (sweep.seeded) {
    for (const Merged::SeedGroup& group : merged.seed_groups) {
      if (group.rows.empty()) continue;
      std::printf("\n%s%s", group.name.empty() ? "" : ("point " + group.name + "\n").c_str(),
                  format_seed_table(group.rows).c_str());
      std::printf("%s", tuned_comparison(sweep.points.front().scenario, group.seeds, group.per_seed).c_str());
    }
    return;
  }
  for (size_t i = 0; i < merged.tables.size(); ++i) {
    if (merged.tables[i].empty()) continue;
    if (sweep.keys.empty()) {
      std::printf("\n%s", format_table(merged.tables[i]).c_str());
    } else {
      std::printf("\npoint %s\n%s", sweep.points[i].name.c_str(), format_table(merged.tables[i]).c_str());
    }
    const std::vector<uint64_t> seed = {sweep.points[i].scenario.seed};
    std::printf("%s", tuned_comparison(sweep.points[i].scenario, seed, {merged.tables[i]}).c_str());
  }
}

size_t count_finished(const std::vector<PlannedRun>& plan) {
  return static_cast<size_t>(std::count_if(plan.begin(), plan.end(), [](const PlannedRun& r) { return r.finished; }));
}

int run(const std::string& file, const RunOptions& options, const std::optional<std::string>& link_bucket) {
  check_output_root(options.output_root);
  const Sweep sweep = load_for_run(file, parse_link_bucket(link_bucket), options);
  const std::vector<PlannedRun> plan = plan_runs(sweep, options);
  const Scenario& first = sweep.points.front().scenario;
  const std::vector<RunEstimate> estimates = check_fits(plan, options, options.recompute);
  // The policies this command runs (-p selects some).
  const size_t policies = selected_policies(first, options.only_labels).size();
  std::printf("%s: %s, %s, %lld steps each", first.name.c_str(), counted(first.world_size(), "worker", "workers").c_str(),
              counted(policies, "policy", "policies").c_str(), static_cast<long long>(first.train.steps));
  if (sweep.seeded) {
    std::printf(", %zu seeds", sweep.seeds.size());
    if (sweep.keys.size() > 1) std::printf(", %zu sweep points", sweep.points.size() / sweep.seeds.size());
  } else if (!sweep.keys.empty()) {
    std::printf(", %zu sweep points", sweep.points.size());
  }
  if (options.shard.count > 1) std::printf(", shard %d/%d: %zu runs", options.shard.index, options.shard.count, plan.size());
  std::printf("\n");
  // The figure is this machine's: off a terminal (CI, a pipe, the README's outputs) it goes to stderr, so
  // that stdout is the same on every machine.
  if (!estimates.empty()) {
    std::fprintf(options.live_progress ? stdout : stderr,
                 "estimate: %s here (%s, %d at once; `locosim check --explain` tells more)\n",
                 machine_time_range(estimates, effective_jobs(options)).c_str(),
                 counted(estimates.size(), "run", "runs").c_str(),
                 std::min(effective_jobs(options), static_cast<int>(estimates.size())));
  }
  if (sweep.seeds_not_needed > 0) {
    std::printf("numerics: none: the schedule does not depend on the training seed; one run stands for all %zu seeds\n",
                sweep.seeds_not_needed);
  }
  const size_t finished = count_finished(plan);
  if (finished > 0 && !options.recompute) {
    std::printf("%zu of %zu runs finished earlier (same scenario hash): not computed again (--force recomputes them)\n",
                finished, plan.size());
  }
  if (!options.recompute) note_damaged(plan);
  const size_t retimed = static_cast<size_t>(std::count_if(plan.begin(), plan.end(), [&](const PlannedRun& r) {
    return r.retime_from && (options.recompute || !r.finished);
  }));
  if (retimed > 0) {
    std::printf("%zu of %zu runs train what an earlier run of theirs trains (their sweep keys only time them): "
                "re-timed, not retrained (--retrain trains them)\n", retimed, plan.size());
  }
  std::fflush(stdout);
  const std::string root = options.output_root + "/" + first.name;
  try {
    run_planned(plan, options);
  } catch (...) {
    remove_unused_folders(plan, root);
    throw;
  }
  if (options.shard.count > 1) {
    std::printf("shard %d/%d done; once every shard is, `locosim merge %s -o %s` writes the summaries\n",
                options.shard.index, options.shard.count, file.c_str(), options.output_root.c_str());
    return 0;
  }
  print_tables(sweep, merge_runs(sweep, options));
  std::printf("\nrun folder: %s\n", root.c_str());
  return 0;
}

// Exit 0 when every selected run is finished, 1 when some are missing (they are listed).
int merge(const std::string& file, const RunOptions& options) {
  check_output_root(options.output_root);
  const Sweep sweep = load_sweep(file, options.seeds, parse_overrides(options.overrides));
  const Merged merged = merge_runs(sweep, options);
  print_tables(sweep, merged);
  if (merged.missing.empty()) {
    std::printf("\nrun folder: %s/%s\n", options.output_root.c_str(), sweep.points.front().scenario.name.c_str());
    return 0;
  }
  std::string list;
  for (size_t i = 0; i < merged.missing.size() && i < 20; ++i) list += (i ? ", " : "") + merged.missing[i];
  if (merged.missing.size() > 20) list += ", ...";
  std::fprintf(stderr, "locosim: %zu runs are not finished (%s); `locosim run %s` or `locosim submit %s` computes them\n",
               merged.missing.size(), list.c_str(), file.c_str(), file.c_str());
  return 1;
}

int submit(const std::string& file, const RunOptions& options, const SlurmOptions& slurm) {
  check_output_root(options.output_root);
  const Sweep sweep = load_sweep(file, options.seeds, parse_overrides(options.overrides));
  const std::vector<PlannedRun> plan = plan_runs(sweep, options);
  const std::string program = std::filesystem::read_symlink("/proc/self/exe").string();
  const SlurmJobs jobs = submit_to_slurm(program, file, plan, options, slurm);
  if (jobs.tasks == 0) {
    std::printf("all %zu runs are finished: nothing to submit (`locosim merge %s` writes the summaries)\n", plan.size(),
                file.c_str());
    return 0;
  }
  std::printf("%zu of %zu runs in %zu array tasks: %s\nmerge when the array has ended: %s\n", jobs.runs, plan.size(),
              jobs.tasks, jobs.array_script.c_str(), jobs.merge_script.c_str());
  if (jobs.array_job.empty()) {
    std::printf("not submitted%s: sbatch %s, then sbatch --dependency=afterany:<its job id> %s\n",
                slurm.submit ? " (no sbatch on PATH)" : "", jobs.array_script.c_str(), jobs.merge_script.c_str());
  } else {
    std::printf("submitted: job array %s, merge job %s (logs in %s)\n", jobs.array_job.c_str(), jobs.merge_job.c_str(),
                jobs.array_script.parent_path().append("logs").c_str());
  }
  return 0;
}

}  // namespace

static int run_command(int argc, char** argv) {
  pin_cpu_kernels(argv);  // first: the same numbers on every x86-64 machine
  ignore_file_size_signal();
  CLI::App app{"locosim: which low-communication training method finishes first, at what loss, on your links"};
  app.set_version_flag("--version", "locosim " LOCOSIM_VERSION);
  app.require_subcommand(1);
  app.failure_message([](const CLI::App* cli, const CLI::Error& e) {  // "error: " as every bad input
    return "error: " + CLI::FailureMessage::simple(cli, e);
  });

  // What run, merge and submit have in common: the scenario, where its run folders go, which policies.
  const auto add_runs = [](CLI::App* cmd, std::string& file, RunOptions& options) {
    cmd->add_option("scenario", file, "scenario YAML file")->required();
    cmd->add_option("-o,--output", options.output_root, "folder for run folders (default: runs)");
    cmd->add_option("-p,--policy", options.only_labels, "only the policy with this label (repeatable)");
    cmd->add_option("--seeds", options.seeds,
                    "train at N seeds: the scenario's seed, seed + 1, ..., seed + N - 1 (instead of its seeds: key)")
        ->check(integer_in(1, kMaxSeeds));
    cmd->add_option("--set", options.overrides,
                    "what if: KEY=VALUE in place of the scenario's (repeatable; KEY as a sweep key: train.steps, "
                    "platform.hosts[0].uplink.bandwidth, policies[diloco].outer_lr)")
        ->allow_extra_args(false);  // one KEY=VALUE per --set: `--set k=v s.yaml` leaves s.yaml alone
  };

  std::string run_file;
  RunOptions options;
  std::optional<std::string> link_bucket;
  bool no_progress = false;
  CLI::App* run_cmd = app.add_subcommand("run", "simulate every policy of a scenario and print the comparison");
  add_runs(run_cmd, run_file, options);
  run_cmd->add_option("-j,--jobs", options.jobs, "policies simulated at once (default: one per core)")
      ->check(integer_in(1, 1024));
  run_cmd->add_option("--step-threads", options.step_threads,
                      "workers' real steps run at once in each policy's simulation; results do not change "
                      "(default: the cores left to each policy by -j and runtime.threads)")
      ->check(integer_in(1, 1024));
  run_cmd->add_flag("--cost", options.cost,
                    "print each policy's real time against the time of its workers' LibTorch steps (the overhead)");
  run_cmd->add_option("--link-bucket", link_bucket, "time bucket of links.csv, e.g. '10 s' (default: the scenario's)");
  run_cmd->add_flag("--no-progress", no_progress, "no live progress lines (never shown off a terminal or in CI)");
  run_cmd->add_flag("--force", options.recompute,
                    "compute again runs already finished, and run even if the estimate says memory or disk will not suffice");
  bool retrain = false;
  run_cmd->add_flag("--retrain", retrain,
                    "train every sweep point, also those that differ from an earlier one only in what times it "
                    "(by default they are re-timed: the same files, the training done once)");
  std::string shard;
  run_cmd->add_option("--shard", shard, "run only part i of n of the runs (i/n, 0 <= i < n); `locosim merge` assembles them");

  std::string merge_file;
  RunOptions merge_options;
  CLI::App* merge_cmd = app.add_subcommand("merge", "write a sweep's summaries from its finished runs (after shards)");
  add_runs(merge_cmd, merge_file, merge_options);

  std::string submit_file;
  RunOptions submit_options;
  SlurmOptions slurm;
  bool no_submit = false;
  CLI::App* submit_cmd = app.add_subcommand("submit", "run a scenario's sweep as a SLURM job array, then merge");
  add_runs(submit_cmd, submit_file, submit_options);
  submit_cmd->add_option("--sbatch", slurm.sbatch_options, "an sbatch option for both jobs, e.g. --sbatch=--time=2:00:00 (repeatable)");
  submit_cmd->add_option("--max-tasks", slurm.max_tasks, "array tasks at most (default 1000)")
      ->check(integer_in(1, kMaxArrayTasks));
  submit_cmd->add_flag("--force", submit_options.recompute, "compute again runs already finished");
  submit_cmd->add_flag("--no-submit", no_submit, "only write the job scripts");

  std::vector<std::string> check_files, check_sets;
  CLI::App* check_cmd = app.add_subcommand("check", "validate scenario files without running them");
  check_cmd->add_option("scenarios", check_files, "scenario YAML files")->required();
  check_cmd->add_option("--set", check_sets, "what if: KEY=VALUE in place of each scenario's (repeatable)")
      ->allow_extra_args(false);
  bool check_explain = false;
  check_cmd->add_flag("--explain", check_explain,
                      "per policy: its collective, one step's compute per accelerator, bytes per sync, the simulated "
                      "wall-clock and the time the run takes here (its schedule simulated, timing only)");

  std::vector<std::string> compare_dirs;
  CLI::App* compare_cmd = app.add_subcommand("compare", "two finished runs' tables side by side, with the change");
  compare_cmd->add_option("runs", compare_dirs, "RUN_A RUN_B: two scenario (or sweep point, or policy) folders")
      ->required()
      ->expected(2);

  std::string report_dir;
  CLI::App* report_cmd = app.add_subcommand("report", "print the comparison table of a finished run");
  report_cmd->add_option("run", report_dir, "run folder (runs/<scenario>, a sweep point or a policy folder)")->required();
  bool report_html = false;
  std::string report_page;
  CLI::Option* html_flag = report_cmd->add_flag(
      "--html", report_html, "write the table and the figures as one self-contained page (default: RUN/report.html)");
  report_cmd->add_option("-o,--output", report_page, "with --html: the page's path")->needs(html_flag);

  std::string plot_run, plot_dir, plot_format = "png";
  CLI::App* plot_cmd = app.add_subcommand("plot", "draw a finished run's figures (the system Python's matplotlib)");
  plot_cmd->add_option("run", plot_run, "run folder (runs/<scenario>, a sweep point, a seed's or a policy folder)")
      ->required();
  plot_cmd->add_option("-o,--output", plot_dir, "folder for the figures (default: RUN/figures)");
  plot_cmd->add_option("--format", plot_format, "png or svg (default: png)")->check(CLI::IsMember({"png", "svg"}));

  CLI::App* policies_cmd = app.add_subcommand(
      "policies", "list the registered policies: source, bytes per round, rule on a failed collective, handover");

  CLI::App* accelerators_cmd = app.add_subcommand(
      "accelerators", "list the built-in accelerators a host may name (accelerator: h100): peak, efficiency, sources");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }

  try {
    if (*check_cmd) return check(check_files, parse_overrides(check_sets), check_explain);
    if (*compare_cmd) {
      std::printf("%s", compare_run_folders(compare_dirs[0], compare_dirs[1]).c_str());
      return 0;
    }
    if (*policies_cmd) {
      std::printf("%s", policy_table().c_str());
      return 0;
    }
    if (*accelerators_cmd) {
      std::printf("%s", accelerator_catalog_table().c_str());
      return 0;
    }
    if (*plot_cmd) {
      std::vector<std::string> args = {"plot", plot_run, "--format", plot_format};
      if (!plot_dir.empty()) args.insert(args.end(), {"-o", plot_dir});
      return run_plot_script(args);
    }
    if (*report_cmd && report_html) {  // the script prints the table with this program: `report RUN`
      std::error_code ec;
      const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
      std::vector<std::string> args = {"html", report_dir, "--locosim", ec ? std::string(argv[0]) : self.string()};
      if (!report_page.empty()) args.insert(args.end(), {"-o", report_page});
      return run_plot_script(args);
    }
    if (*report_cmd) {
      std::printf("%s", report_run_folder(report_dir).c_str());
      return 0;
    }
    if (*merge_cmd) return merge(merge_file, merge_options);
    if (*submit_cmd) {
      slurm.submit = !no_submit;
      return submit(submit_file, submit_options, slurm);
    }
    if (!shard.empty()) options.shard = parse_shard(shard);
    options.live_progress = !no_progress && wants_live_progress();
    options.retime = !retrain;
    return run(run_file, options, link_bucket);
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "locosim: %s\n", e.what());
    return 128 + e.signal();
  } catch (const std::exception& e) {
    return report_failure(e, "locosim");
  }
}

// The command's locals are gone once run_command returns (its files are committed, its children
// reaped); what is left is the libraries' static state. LibTorch's takes a tenth of a second to tear
// down (it unregisters every operator kernel one by one), on every command, for memory the process
// is about to give back anyway: the process ends here, its output flushed, without it.
int main(int argc, char** argv) {
  const int code = run_command(argc, argv);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
