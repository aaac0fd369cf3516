// ChildPool: the child processes a driver starts and waits for, the one pool of both backends'
// drivers (`locosim run`: a process per run; `locosim-real --spawn`: a process per rank). Children are
// forked with StopSignals::fork_child (they die with their parent), reaped without blocking, and
// stopped together: SIGTERM, then SIGKILL for any still there after a grace period.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace locosim {

class ChildPool {
 public:
  // A child that ended, with its status as waitpid(2) gives it.
  struct Ended {
    pid_t pid;
    int status;
  };

  ChildPool() = default;
  ~ChildPool();  // kills and reaps any child still running: none outlives its pool
  ChildPool(const ChildPool&) = delete;
  ChildPool& operator=(const ChildPool&) = delete;

  // Forks a child that runs `body`, which must not return (it ends in _exit or exec; a body that
  // returns or throws ends the child with exit code 127). Throws std::runtime_error naming `what`
  // when fork fails. Flushes stdout and stderr first, so the child does not print them again.
  pid_t start(const std::string& what, const std::function<void()>& body);

  // The children that ended since the last call, in pid order; does not wait.
  std::vector<Ended> reap();

  // reap(), after waiting up to `timeout` for a child to end (less when a stop signal arrives meanwhile).
  std::vector<Ended> wait(std::chrono::milliseconds timeout);

  // Sends `signal` to every running child.
  void signal_all(int signal);

  // Sends SIGTERM to every running child and waits up to `grace` for them; each still running then
  // is named to `on_kill` and gets SIGKILL. Returns when every child is reaped; their exits are not
  // reported.
  void stop(std::chrono::seconds grace, const std::function<void(pid_t)>& on_kill);

  // Names each running child to `on_kill` (if given), sends it SIGKILL and reaps it.
  void kill_all(const std::function<void(pid_t)>& on_kill);

  const std::set<pid_t>& running() const { return running_; }
  bool empty() const { return running_.empty(); }

 private:
  std::set<pid_t> running_;
};

// Runs `body` (as for ChildPool::start) in a child process and waits for it; returns its status as
// waitpid(2) gives it. For work that must not run in this process (a simulation: SimGrid allows one
// engine per process; a CUDA probe: CUDA started here would not work in the processes forked later).
int run_in_child(const std::string& what, const std::function<void()>& body);

// How a child ended, in words: "exited with code 3" or "was killed by signal 9".
std::string describe_exit(int status);

}  // namespace locosim
