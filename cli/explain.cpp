// explain_policy: a timing-only probe of the policy's schedule, read back from its run files.
#include "cli/explain.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "algorithms/policy_registry.hpp"
#include "report/child_pool.hpp"
#include "report/summary.hpp"
#include "cli/estimate.hpp"
#include "sim/simulate.hpp"

namespace locosim {
namespace fs = std::filesystem;
namespace {

// Rows of events.csv the probe simulates at most: about 2 s on one core (cli/estimate.cpp's price per row).
constexpr double kProbeRows = 2e5;

// The collective the policy's rounds use (its registry trait), with the scenario's algorithm for it.
std::string collective_of(const Scenario& s, const PolicySpec& policy) {
  const std::string reduce = algorithm_name(s.network.all_reduce), gather = algorithm_name(s.network.all_gather);
  std::string out;
  switch (policy.entry().collective(policy.config)) {
    case RoundCollective::all_reduce: out = "all-reduce " + reduce; break;
    case RoundCollective::subgroup_all_reduce: out = "all-reduce " + reduce + " within groups"; break;
    case RoundCollective::all_gather: out = "all-gather " + gather; break;
    case RoundCollective::server: out = "parameter server (point to point)"; break;
  }
  return s.network.aggregated ? out + " (flows aggregated)" : out;
}

// Steps the probe simulates: the whole run when its schedule is cheap, else whole rounds worth about
// kProbeRows rows (at least one round).
int64_t probe_steps(const Scenario& s, const PolicySpec& policy) {
  Scenario timing = s;
  timing.timing_only = true;
  const double rows_per_step = std::max(1.0, estimate_policy_run(timing, policy).rows / static_cast<double>(s.train.steps));
  int64_t steps = std::min<int64_t>(s.train.steps, std::max<int64_t>(1, static_cast<int64_t>(kProbeRows / rows_per_step)));
  if (const auto period = sync_period(policy)) {
    const int64_t h = period->second;
    steps = std::min(s.train.steps, std::max(h, (steps + h - 1) / h * h));
  }
  return steps;
}

// Simulates `probe` in a child process writing into `dir`; returns the child's wall time in seconds.
double simulate_in_child(const Scenario& probe, const PolicySpec& policy, const std::string& dir) {
  const auto started = std::chrono::steady_clock::now();
  const int status = run_in_child("policy " + policy.label, [&] {
    int code = 0;
    try {
      simulate_policy(probe, policy, dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "locosim: explaining %s: %s\n", policy.label.c_str(), e.what());
      code = 1;
    }
    std::fflush(stderr);
    std::_Exit(code);  // not the parent's destructors
  });
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the timing-only simulation of policy " + policy.label + " failed");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// Compute per step per accelerator type (the mean over its workers), in rank order of first appearance,
// from events.csv. Per step, not per span: DDP splits a step's backward into a span per bucket.
std::vector<std::pair<std::string, double>> step_compute(const Scenario& s, const fs::path& events_csv, int64_t steps) {
  std::ifstream in(events_csv);
  std::string line;
  std::getline(in, line);  // worker,kind,start_s,end_s,bytes,peer
  std::map<int, std::pair<double, int64_t>> per_worker;  // (seconds, spans)
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string worker, kind, start, end;
    if (!std::getline(row, worker, ',') || !std::getline(row, kind, ',') || kind != "compute") continue;
    std::getline(row, start, ',');
    std::getline(row, end, ',');
    auto& [seconds, spans] = per_worker[std::atoi(worker.c_str())];
    seconds += std::strtod(end.c_str(), nullptr) - std::strtod(start.c_str(), nullptr);
    ++spans;
  }
  std::vector<std::string> types;
  std::map<std::string, std::pair<double, int>> sums;  // (sum of workers' means, workers)
  for (const auto& [worker, totals] : per_worker) {
    if (worker >= s.world_size() || totals.second == 0) continue;  // the relay computes nothing
    const std::string& type = s.platform.hosts[static_cast<size_t>(worker)].accelerator;
    if (!sums.count(type)) types.push_back(type);
    sums[type].first += totals.first / static_cast<double>(steps);
    sums[type].second += 1;
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& type : types) out.emplace_back(type, sums[type].first / sums[type].second);
  return out;
}

// A temporary folder for the probe, removed when this goes.
struct TemporaryFolder {
  fs::path path;
  TemporaryFolder() {
    std::string pattern = (fs::temp_directory_path() / "locosim-explain-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error(std::string("cannot make a temporary folder: ") + std::strerror(errno));
    path = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

double extrapolated_seconds(int64_t short_steps, double short_s, int64_t steps, double probe_s, int64_t total_steps) {
  const double total = static_cast<double>(total_steps), n = static_cast<double>(steps);
  const double per_step = (probe_s - short_s) / (n - static_cast<double>(short_steps));
  if (!(steps > short_steps) || !(per_step > 0)) return probe_s * total / n;
  const double start_up = std::max(0.0, probe_s - per_step * n);
  return start_up + per_step * total;
}

PolicyExplanation explain_policy(const Scenario& scenario, const PolicySpec& policy) {
  PolicyExplanation e;
  e.label = policy.label;
  e.policy = policy.name;
  e.collective = collective_of(scenario, policy);
  const auto period = sync_period(policy);
  e.sync_every_steps = period ? period->second : 1;
  e.syncs = scenario.train.steps / e.sync_every_steps;

  Scenario probe = scenario;
  probe.timing_only = true;
  probe.trace = "none";
  probe.train.steps = probe_steps(scenario, policy);
  e.simulated_steps = probe.train.steps;
  TemporaryFolder dir;
  const double probe_s = simulate_in_child(probe, policy, dir.path.string());
  const RunSummary summary = read_summary_json((dir.path / "summary.json").string());
  const double scale = static_cast<double>(scenario.train.steps) / static_cast<double>(probe.train.steps);
  const double probe_syncs = std::max<double>(1, static_cast<double>(probe.train.steps / e.sync_every_steps));
  e.wall_clock_s = summary.wall_clock_s * scale;
  e.sent_per_sync_bytes = summary.sent_bytes_per_worker / probe_syncs;
  e.recv_per_sync_bytes = summary.recv_bytes_per_worker / probe_syncs;
  e.step_compute_s = step_compute(scenario, dir.path / "events.csv", probe.train.steps);
  // The schedule as the probes took it, for all the steps, and the real LibTorch work priced from FLOPs.
  // Extrapolated, a second probe of half the rounds (one at least) tells the start-up from the steps:
  // scaled with them, a swarm's start-up made its 100 rounds look 2.5x as long as they took.
  double machine_s = probe_s * scale;
  const int64_t h = e.sync_every_steps;
  if (scale > 1 && probe.train.steps >= 2 * h) {
    Scenario shorter = probe;
    shorter.train.steps = std::max(h, probe.train.steps / h / 2 * h);
    TemporaryFolder short_dir;
    const double short_s = simulate_in_child(shorter, policy, short_dir.path.string());
    machine_s = extrapolated_seconds(shorter.train.steps, short_s, probe.train.steps, probe_s, scenario.train.steps);
  }
  e.machine_s = machine_s + estimate_policy_run(scenario, policy).torch_seconds;
  return e;
}

namespace {

std::string step_time(double s) { return s < 1 ? fmt::format("{:.3g} ms", s * 1e3) : human_time(s); }

// "20 s to 1.3 min": the estimate is within 2x of what runs took (calibrated on the shipped scenarios).
std::string machine_range(double s) { return human_time(s / 2) + " to " + human_time(s * 2); }

}  // namespace

std::string format_explanations(const Scenario& s, const std::vector<PolicyExplanation>& policies, int cores) {
  std::string out;
  double total_s = 0, longest_s = 0;
  for (const PolicyExplanation& e : policies) {
    std::string compute;
    for (const auto& [type, seconds] : e.step_compute_s) compute += (compute.empty() ? "" : ", ") + type + " " + step_time(seconds);
    const std::string every = e.sync_every_steps == 1 ? "every step" : fmt::format("every {} steps", e.sync_every_steps);
    const std::string simulated = e.simulated_steps == s.train.steps
                                      ? "the whole run simulated, timing only"
                                      : fmt::format("extrapolated from {} of {} steps simulated, timing only", e.simulated_steps,
                                                    s.train.steps);
    out += fmt::format("  {}{}\n", e.label, e.label == e.policy ? "" : " (" + e.policy + ")");
    out += fmt::format("    collective            {}\n", e.collective);
    out += fmt::format("    one step's compute    {}\n", compute.empty() ? "-" : compute);
    out += fmt::format("    per sync, per worker  {:.1f} MB sent, {:.1f} MB received; {} syncs ({})\n", e.sent_per_sync_bytes / 1e6,
                       e.recv_per_sync_bytes / 1e6, e.syncs, every);
    out += fmt::format("    simulated wall-clock  {} ({})\n", human_time(e.wall_clock_s), simulated);
    out += fmt::format("    on this machine       {} (about {} on one core)\n", machine_range(e.machine_s), human_time(e.machine_s));
    total_s += e.machine_s;
    longest_s = std::max(longest_s, e.machine_s);
  }
  if (policies.size() > 1) {
    const int at_once = std::max(1, std::min<int>(cores, static_cast<int>(policies.size())));
    const double whole_s = std::max(longest_s, total_s / at_once);  // -j: one policy per core
    out += fmt::format("  all {} policies here: {} ({} at once on {} cores)\n", policies.size(), machine_range(whole_s),
                       at_once, cores);
  }
  return out;
}

}  // namespace locosim
