// run_planned: a child process per unfinished run (a ChildPool: SimGrid allows one engine per
// process), at most `jobs` at once, each reporting its progress through a pipe; its staged folder is
// committed when it exits with 0 and dropped otherwise.
#include "cli/run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/torch_time.hpp"
#include "cli/progress.hpp"
#include "config/error.hpp"
#include "report/child_pool.hpp"
#include "report/recorder_csv.hpp"
#include "report/resume.hpp"
#include "report/run_files.hpp"
#include "report/run_folder.hpp"
#include "report/stop_signals.hpp"
#include "scenario/device.hpp"
#include "sim/simulate.hpp"

namespace locosim {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The child: simulate, write, report steps on `progress_fd` ("<step> <time_s>\n", at most 5 a second),
// and leave without running the parent's destructors (the parent's StagedFolders are its own).
// With `retime`, the run's numbers come from task.retime_from's folder (sim/simulate.hpp).
[[noreturn]] void child(const PlannedRun& task, const std::string& dir, int progress_fd, int step_threads,
                        bool cost, bool retime) {
  int code = 0;
  const Clock::time_point started = Clock::now();
  try {
    const Scenario& scenario = task.point->scenario;
    write_run_identity(dir, scenario, *task.policy, "locosim", task.hash);
    const int64_t steps = scenario.train.steps;
    Clock::time_point last = Clock::now() - std::chrono::seconds(1);
    std::optional<ReusedNumerics> reused;
    if (retime) reused = read_reused_numerics(task.retime_from->dir.string());
    const auto report = [&](int64_t step, double time_s) {
      if (step < steps && Clock::now() - last < std::chrono::milliseconds(200)) return;
      last = Clock::now();
      char line[64];
      const int n = std::snprintf(line, sizeof line, "%lld %.9g\n", static_cast<long long>(step), time_s);
      if (write(progress_fd, line, static_cast<size_t>(n)) < 0) return;  // the parent stopped listening: carry on
    };
    simulate_policy(scenario, *task.policy, dir, step_threads, report, reused ? &*reused : nullptr);
    if (cost) {  // the whole child (loading, simulating, writing) against its LibTorch work
      const TorchTime& t = torch_time();
      const double all_s = std::chrono::duration<double>(Clock::now() - started).count();
      const double steps_s = t.steps_ns * 1e-9, optimizer_s = t.optimizer_ns * 1e-9, eval_s = t.eval_ns * 1e-9;
      // Steps on a pool overlap: their wall time is at least their sum over the threads.
      const double torch_s = steps_s / step_threads + optimizer_s + eval_s;
      std::printf("cost %s: %.3f s in all; LibTorch: steps %.3f s (on %d thread%s), optimizer %.3f s, "
                  "evaluation %.3f s; overhead %.3fx\n",
                  task.name.c_str(), all_s, steps_s, step_threads, step_threads == 1 ? "" : "s", optimizer_s, eval_s,
                  torch_s > 0 ? all_s / torch_s : 0.0);
    }
  } catch (const ConfigError& e) {  // what only the machine running it can refuse (runtime.device)
    std::fprintf(stderr, "error: %s\n", e.what());
    code = kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "locosim: policy %s failed: %s\n", task.policy->label.c_str(), e.what());
    code = 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

struct Running {
  const PlannedRun* task = nullptr;
  bool retimed = false;
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

// Stops every running child (SIGTERM, then SIGKILL for one still there after 10 s) and drops its
// unfinished folder.
void stop_all(ChildPool& pool, std::map<pid_t, Running>& running) {
  constexpr auto kStopGrace = std::chrono::seconds(10);
  pool.stop(kStopGrace, [&](pid_t pid) {
    std::fprintf(stderr, "locosim: policy %s did not stop %lld s after SIGTERM; killing it\n",
                 running.at(pid).task->name.c_str(), static_cast<long long>(kStopGrace.count()));
  });
  for (const auto& [pid, r] : running) {
    if (r.fd >= 0) close(r.fd);
  }
  running.clear();  // the StagedFolders remove the temporary folders
}

// Runs the tasks, at most `jobs` at once; throws std::runtime_error naming the failed ones, or
// Interrupted (after stopping the children and removing their folders) on SIGINT, SIGTERM or SIGHUP.
void run_tasks(const std::vector<const PlannedRun*>& tasks, const RunOptions& options) {
  const int jobs = effective_jobs(options);
  // Each running policy gets its share of the cores for its workers' steps, each step using
  // runtime.threads of them; --step-threads overrides.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int at_once = std::max(1, std::min(jobs, static_cast<int>(tasks.size())));
  auto step_threads = [&](const Scenario& scenario) {
    return options.step_threads > 0 ? options.step_threads : std::max(1, cores / at_once / scenario.threads);
  };
  size_t name_width = 6;
  for (const PlannedRun* t : tasks) name_width = std::max(name_width, t->name.size());

  StopSignals stop_signals;
  ProgressBoard board(stdout, options.live_progress);
  ChildPool pool;
  std::map<pid_t, Running> running;  // what the pool's children run
  std::vector<std::string> failures;
  size_t bad_input = 0;  // of the failures: children that exited with kExitBadInput
  // Runs that train first: the re-timed ones wait for theirs (always a training run: no cycles).
  std::vector<const PlannedRun*> order = tasks;
  std::stable_partition(order.begin(), order.end(), [](const PlannedRun* t) { return !t->retime_from; });
  std::set<fs::path> unfinished;  // folders of the tasks not done yet
  for (const PlannedRun* t : order) unfinished.insert(t->dir);
  std::vector<bool> launched(order.size(), false);
  const auto next_ready = [&]() -> const PlannedRun* {
    for (size_t i = 0; i < order.size(); ++i) {
      if (launched[i] || (order[i]->retime_from && unfinished.count(order[i]->retime_from->dir))) continue;
      launched[i] = true;
      return order[i];
    }
    return nullptr;
  };
  size_t done = 0;
  try {
    while (done < order.size()) {
      if (const int signal = StopSignals::received()) throw Interrupted(signal);
      while (static_cast<int>(running.size()) < jobs) {
        const PlannedRun* ready = next_ready();
        if (!ready) break;
        const PlannedRun& t = *ready;
        // Re-timed only if the run it re-times finished with its exact losses (one from an older
        // build, or one that failed, leaves this run to train itself).
        const bool retime = t.retime_from && is_finished_run(t.retime_from->dir, t.retime_from->hash) &&
                            fs::exists(t.retime_from->dir / kExactLossesFile);
        auto staged = std::make_unique<StagedFolder>(t.dir);
        int fds[2];
        if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for policy " + t.name);
        const pid_t pid = pool.start("policy " + t.name, [&] {
          close(fds[0]);
          child(t, staged->path().string(), fds[1], step_threads(t.point->scenario), options.cost, retime);
        });
        close(fds[1]);
        fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
        Running r;
        r.task = &t;
        r.retimed = retime;
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
      for (auto& [pid, r] : running) drain(r);
      for (const auto& [pid, status] : pool.reap()) {
        Running& r = running.at(pid);
        drain(r);  // what it wrote just before it ended
        if (r.fd >= 0) close(r.fd);
        const PlannedRun& t = *r.task;
        ++done;
        unfinished.erase(t.dir);
        const double elapsed = std::chrono::duration<double>(Clock::now() - r.started).count();
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
          r.staged->commit();
          char line[1024];
          const std::string how = r.retimed ? " (re-timed from " + t.retime_from->name + ")" : std::string();
          std::snprintf(line, sizeof line, "[%zu/%zu] %s simulated in %.1f s%s -> %s", done, order.size(), t.name.c_str(),
                        elapsed, how.c_str(), t.dir.c_str());
          board.print(line);
        } else {
          bad_input += WIFEXITED(status) && WEXITSTATUS(status) == kExitBadInput;
          failures.push_back(t.name + (WIFSIGNALED(status) ? " (killed by signal " + std::to_string(WTERMSIG(status)) + ")"
                                                           : " (exit " + std::to_string(WEXITSTATUS(status)) + ")"));
        }
        running.erase(pid);  // an uncommitted StagedFolder removes its folder
      }
      std::vector<std::string> lines;
      for (const auto& [pid, r] : running) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - r.started).count();
        lines.push_back(progress_line(r.task->name, r.step, r.task->point->scenario.train.steps, r.sim_s, elapsed, name_width));
      }
      board.draw(lines);
    }
  } catch (...) {
    board.clear();
    stop_all(pool, running);
    throw;
  }
  board.clear();
  if (!failures.empty()) {
    std::string list;
    for (const auto& f : failures) list += (list.empty() ? "" : ", ") + f;
    // Refused by their scenario on this machine (the reason is above): bad input, exit 2.
    if (bad_input == failures.size()) throw std::invalid_argument("policies refused: " + list);
    throw std::runtime_error("policies failed: " + list);
  }
}

// Refuses, before any folder is touched, a device this machine cannot train on (runtime.device). It is
// asked in a child process: CUDA started in this one would not work in the runs forked after it.
void check_devices(const std::vector<const PlannedRun*>& tasks) {
  std::set<std::string> asked;
  for (const PlannedRun* t : tasks) {
    const Scenario& scenario = t->point->scenario;
    if (scenario.device == "cpu" || scenario.timing_only || t->retime_from || !asked.insert(scenario.device).second) {
      continue;
    }
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    // The message fits in the pipe's buffer: it is read once the child has ended.
    const int status = run_in_child("the check of runtime.device", [&] {
      close(fds[0]);
      int code = 0;
      try {
        training_device(scenario);
      } catch (const std::exception& e) {
        const std::string message = e.what();
        code = write(fds[1], message.data(), message.size()) < 0 ? 1 : kExitBadInput;
      }
      std::_Exit(code);
    });
    close(fds[1]);
    std::string message;
    char buf[1024];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) message.append(buf, n > 0 ? n : 0);
    close(fds[0]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::invalid_argument(message.empty() ? "runtime.device " + scenario.device + ": the check failed"
                                                  : message);
    }
  }
}

}  // namespace

void run_planned(const std::vector<PlannedRun>& runs, const RunOptions& options) {
  if (runs.empty()) return;
  std::vector<const PlannedRun*> tasks;
  std::vector<fs::path> folders = {child_path(options.output_root, runs.front().point->scenario.name)};
  for (const PlannedRun& r : runs) {
    if (options.recompute || !r.finished) tasks.push_back(&r);
    if (std::find(folders.begin(), folders.end(), r.dir.parent_path()) == folders.end()) folders.push_back(r.dir.parent_path());
  }
  // Clear what killed runs left, make the folders locosim's, and check that every run's folder may be
  // replaced, before anything runs.
  for (const fs::path& dir : folders) remove_stale_temporaries(dir);
  if (tasks.empty()) return;
  check_devices(tasks);
  for (const fs::path& dir : folders) claim_folder(dir);
  for (const PlannedRun* t : tasks) check_replaceable(t->dir);
  run_tasks(tasks, options);
}

}  // namespace locosim
