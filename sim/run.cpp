// run_scenario and run_sweep: a pool of child processes, one per (point, policy), with progress
// through pipes; then the summary files (sim/report.cpp reads them back).
#include "sim/run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "report/output_file.hpp"
#include "report/run_folder.hpp"
#include "report/stop_signals.hpp"
#include "sim/progress.hpp"
#include "sim/simulate.hpp"

namespace locosim {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// One policy of one scenario (or sweep point), to be simulated into `dir`.
struct Task {
  const Scenario* scenario = nullptr;
  const PolicySpec* policy = nullptr;
  fs::path dir;            // its final place: child_path of a locosim folder
  std::string name;  // in progress lines: the label, or point/label
};


// The child: simulate, write, report steps on `progress_fd` ("<step> <time_s>\n", at most 5 a second),
// and leave without running the parent's destructors (the parent's StagedFolders are its own).
[[noreturn]] void child(const Task& task, const std::string& dir, int progress_fd) {
  int code = 0;
  try {
    write_text_file(dir + "/resolved.yaml",
                    "# locosim run of policy '" + task.policy->label + "'\n" + task.scenario->resolved_yaml);
    const int64_t steps = task.scenario->train.steps;
    Clock::time_point last = Clock::now() - std::chrono::seconds(1);
    simulate_policy(*task.scenario, *task.policy, dir, [&](int64_t step, double time_s) {
      if (step < steps && Clock::now() - last < std::chrono::milliseconds(200)) return;
      last = Clock::now();
      char line[64];
      const int n = std::snprintf(line, sizeof line, "%lld %.9g\n", static_cast<long long>(step), time_s);
      if (write(progress_fd, line, static_cast<size_t>(n)) < 0) return;  // the parent stopped listening: carry on
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "locosim: policy %s failed: %s\n", task.policy->label.c_str(), e.what());
    code = 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

struct Running {
  const Task* task = nullptr;
  std::unique_ptr<StagedFolder> staged;  // where the child writes; committed when it exits with 0
  int fd = -1;             // the read end of the child's progress pipe; -1 once it hit end of file
  std::string pending;     // a partial line
  int64_t step = 0;
  double sim_s = 0;
  Clock::time_point started;
};

// Reads what the child wrote; keeps the last complete report.
void drain(Running& r) {
  char buf[4096];
  while (r.fd >= 0) {
    ssize_t n = read(r.fd, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0) close(r.fd), r.fd = -1;  // end of file: the child is gone
      break;
    }
    r.pending.append(buf, static_cast<size_t>(n));
  }
  size_t end;
  while ((end = r.pending.find('\n')) != std::string::npos) {
    long long step = 0;
    double sim_s = 0;
    if (std::sscanf(r.pending.substr(0, end).c_str(), "%lld %lf", &step, &sim_s) == 2) r.step = step, r.sim_s = sim_s;
    r.pending.erase(0, end + 1);
  }
}

// Stops every running child (SIGTERM), waits for it and drops its unfinished folder.
void stop_all(std::map<pid_t, Running>& running) {
  for (const auto& [pid, r] : running) kill(pid, SIGTERM);
  for (auto& [pid, r] : running) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (r.fd >= 0) close(r.fd);
  }
  running.clear();  // the StagedFolders remove the temporary folders
}

// Runs the tasks, at most `jobs` at once; throws std::runtime_error naming the failed ones, or
// Interrupted (after stopping the children and removing their folders) on SIGINT, SIGTERM or SIGHUP.
void run_tasks(const std::vector<Task>& tasks, const RunOptions& options) {
  const int jobs = effective_jobs(options);
  size_t name_width = 6;
  for (const auto& t : tasks) name_width = std::max(name_width, t.name.size());

  StopSignals stop_signals;
  ProgressBoard board(stdout, options.live_progress);
  std::map<pid_t, Running> running;
  std::vector<std::string> failures;
  size_t next = 0, done = 0;
  const pid_t parent = getpid();
  try {
    while (done < tasks.size()) {
      if (const int signal = StopSignals::received()) throw Interrupted(signal);
      while (next < tasks.size() && static_cast<int>(running.size()) < jobs) {
        const Task& t = tasks[next++];
        auto staged = std::make_unique<StagedFolder>(t.dir);
        int fds[2];
        if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for policy " + t.name);
        std::fflush(stdout);
        std::fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) throw std::runtime_error("cannot fork a process for policy " + t.name);
        if (pid == 0) {
          StopSignals::child_defaults(parent);
          close(fds[0]);
          child(t, staged->path().string(), fds[1]);
        }
        close(fds[1]);
        fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
        Running r;
        r.task = &t;
        r.staged = std::move(staged);
        r.fd = fds[0];
        r.started = Clock::now();
        running[pid] = std::move(r);
      }

      std::vector<pollfd> fds;
      for (const auto& [pid, r] : running) {
        if (r.fd >= 0) fds.push_back({r.fd, POLLIN, 0});
      }
      poll(fds.data(), fds.size(), 200);  // also the pause between checks; a signal ends it early
      for (auto it = running.begin(); it != running.end();) {
        Running& r = it->second;
        drain(r);
        int status = 0;
        if (waitpid(it->first, &status, WNOHANG) != it->first) {
          ++it;
          continue;
        }
        if (r.fd >= 0) close(r.fd);
        const Task& t = *r.task;
        ++done;
        const double elapsed = std::chrono::duration<double>(Clock::now() - r.started).count();
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
          r.staged->commit();
          char line[1024];
          std::snprintf(line, sizeof line, "[%zu/%zu] %s simulated in %.1f s -> %s", done, tasks.size(), t.name.c_str(),
                        elapsed, t.dir.c_str());
          board.print(line);
        } else {
          failures.push_back(t.name + (WIFSIGNALED(status) ? " (killed by signal " + std::to_string(WTERMSIG(status)) + ")"
                                                           : " (exit " + std::to_string(WEXITSTATUS(status)) + ")"));
        }
        it = running.erase(it);  // an uncommitted StagedFolder removes its folder
      }
      std::vector<std::string> lines;
      for (const auto& [pid, r] : running) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - r.started).count();
        lines.push_back(progress_line(r.task->name, r.step, r.task->scenario->train.steps, r.sim_s, elapsed, name_width));
      }
      board.draw(lines);
    }
  } catch (...) {
    board.clear();
    stop_all(running);
    throw;
  }
  board.clear();
  if (!failures.empty()) {
    std::string list;
    for (const auto& f : failures) list += (list.empty() ? "" : ", ") + f;
    throw std::runtime_error("policies failed: " + list);
  }
}

std::vector<RunSummary> read_summaries(const std::vector<Task>& tasks) {
  std::vector<RunSummary> rows;
  for (const Task& t : tasks) rows.push_back(read_summary_json((t.dir / "summary.json").string()));
  return rows;
}

// Writes through a temporary file renamed into place.
void write_summaries(const std::vector<RunSummary>& rows, const fs::path& path) {
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp");
  write_summary_csv(rows, tmp.string());
  fs::rename(tmp, path);
}

// Makes `dir` a locosim folder, clears what killed runs left in it, and checks that every task's
// folder inside it may be replaced, before anything runs.
void prepare_folder(const fs::path& dir, const std::vector<Task>& tasks) {
  claim_folder(dir);
  remove_stale_temporaries(dir);
  for (const Task& t : tasks) check_replaceable(t.dir);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

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

std::vector<RunSummary> run_scenario(const Scenario& scenario, const RunOptions& options) {
  const fs::path root = child_path(options.output_root, scenario.name);
  std::vector<Task> tasks;
  for (const PolicySpec* p : selected_policies(scenario, options.only_labels)) {
    tasks.push_back({&scenario, p, child_path(root, p->label), p->label});
  }
  prepare_folder(root, tasks);
  run_tasks(tasks, options);
  // summary.csv covers every policy of the scenario that has a finished folder, so running one
  // policy again (--policy) does not drop the others' rows.
  std::vector<RunSummary> all;
  for (const PolicySpec& p : scenario.policies) {
    const fs::path summary = child_path(root, p.label) / "summary.json";
    if (is_locosim_folder(summary.parent_path()) && fs::exists(summary)) all.push_back(read_summary_json(summary.string()));
  }
  write_summaries(all, root / "summary.csv");
  return read_summaries(tasks);
}

std::vector<std::vector<RunSummary>> run_sweep(const Sweep& sweep, const RunOptions& options) {
  if (sweep.points.empty()) return {};
  const fs::path root = child_path(options.output_root, sweep.points.front().scenario.name);
  std::vector<std::vector<Task>> per_point;
  std::vector<Task> tasks;
  for (const SweepPoint& point : sweep.points) {
    per_point.emplace_back();
    const fs::path point_dir = child_path(root, point.name);
    for (const PolicySpec* p : selected_policies(point.scenario, options.only_labels)) {
      per_point.back().push_back({&point.scenario, p, child_path(point_dir, p->label), point.name + "/" + p->label});
      tasks.push_back(per_point.back().back());
    }
  }
  prepare_folder(root, {});
  for (size_t i = 0; i < sweep.points.size(); ++i) prepare_folder(child_path(root, sweep.points[i].name), per_point[i]);
  run_tasks(tasks, options);

  std::vector<std::vector<RunSummary>> results;
  std::ostringstream grid;
  for (size_t i = 0; i < sweep.points.size(); ++i) {
    const SweepPoint& point = sweep.points[i];
    results.push_back(read_summaries(per_point[i]));
    const fs::path csv = child_path(root, point.name) / "summary.csv";
    write_summaries(results.back(), csv);
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);  // the header
    if (i == 0) {
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
  const fs::path tmp = root / ".summary.csv.tmp";
  write_text_file(tmp.string(), grid.str());
  fs::rename(tmp, root / "summary.csv");
  return results;
}

}  // namespace locosim
