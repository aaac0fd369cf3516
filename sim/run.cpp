// run_scenario: fork a child per policy, wait, rename the finished folders into place.
#include "sim/run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "sim/simulate.hpp"

namespace locosim {
namespace fs = std::filesystem;

namespace {

std::vector<const PolicySpec*> select(const Scenario& scenario, const std::vector<std::string>& only) {
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

// The child: simulate, write, and leave without running the parent's destructors.
[[noreturn]] void child(const Scenario& scenario, const PolicySpec& policy, const std::string& dir) {
  int code = 0;
  try {
    std::ofstream(dir + "/resolved.yaml") << "# locosim run of policy '" << policy.label << "'\n"
                                          << scenario.resolved_yaml;
    simulate_policy(scenario, policy, dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "locosim: policy %s failed: %s\n", policy.label.c_str(), e.what());
    code = 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

}  // namespace

std::vector<RunSummary> run_scenario(const Scenario& scenario, const RunOptions& options) {
  std::vector<const PolicySpec*> policies = select(scenario, options.only_labels);
  const fs::path root = fs::path(options.output_root) / scenario.name;
  fs::create_directories(root);
  int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  std::map<pid_t, const PolicySpec*> running;
  std::map<const PolicySpec*, std::chrono::steady_clock::time_point> started;
  std::vector<std::string> failures;
  size_t next = 0, done = 0;
  const std::string temp_suffix = ".tmp." + std::to_string(getpid());  // the parent's pid, also in the child
  auto temp_dir = [&](const PolicySpec* p) { return root / ("." + p->label + temp_suffix); };
  while (done < policies.size()) {
    while (next < policies.size() && static_cast<int>(running.size()) < jobs) {
      const PolicySpec* p = policies[next++];
      fs::remove_all(temp_dir(p));
      fs::create_directories(temp_dir(p));
      std::fflush(stdout);
      std::fflush(stderr);
      pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("cannot fork a process for policy " + p->label);
      if (pid == 0) child(scenario, *p, temp_dir(p).string());
      running[pid] = p;
      started[p] = std::chrono::steady_clock::now();
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 || !running.count(pid)) continue;
    const PolicySpec* p = running[pid];
    running.erase(pid);
    ++done;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started[p]).count();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      fs::remove_all(root / p->label);
      fs::rename(temp_dir(p), root / p->label);
      std::printf("[%zu/%zu] %s simulated in %.1f s -> %s\n", done, policies.size(), p->label.c_str(), elapsed,
                  (root / p->label).c_str());
    } else {
      fs::remove_all(temp_dir(p));
      failures.push_back(p->label + (WIFSIGNALED(status) ? " (killed by signal " + std::to_string(WTERMSIG(status)) + ")"
                                                         : " (exit " + std::to_string(WEXITSTATUS(status)) + ")"));
    }
    std::fflush(stdout);
  }
  if (!failures.empty()) {
    std::string list;
    for (const auto& f : failures) list += (list.empty() ? "" : ", ") + f;
    throw std::runtime_error("policies failed: " + list);
  }

  std::vector<RunSummary> summaries;
  for (const PolicySpec* p : policies) summaries.push_back(read_summary_json((root / p->label / "summary.json").string()));
  const fs::path csv_tmp = root / ".summary.csv.tmp";
  write_summary_csv(summaries, csv_tmp.string());
  fs::rename(csv_tmp, root / "summary.csv");
  return summaries;
}

}  // namespace locosim
