// ChildPool: fork through StopSignals, reap with WNOHANG, stop with SIGTERM then SIGKILL.
#include "report/child_pool.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "report/stop_signals.hpp"

namespace locosim {
namespace {

using PoolClock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(10);

// waitpid without blocking, retried on EINTR: the pid when it ended (its status in `status`), else 0.
pid_t reap_one(pid_t pid, int& status) {
  pid_t got;
  while ((got = waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  return got == pid ? pid : 0;
}

}  // namespace

ChildPool::~ChildPool() { kill_all({}); }

pid_t ChildPool::start(const std::string& what, const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = StopSignals::fork_child();
  if (pid < 0) throw std::runtime_error("cannot fork a process for " + what);
  if (pid == 0) {
    try {
      body();
    } catch (...) {
    }
    std::_Exit(127);
  }
  running_.insert(pid);
  return pid;
}

std::vector<ChildPool::Ended> ChildPool::reap() {
  std::vector<Ended> ended;
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    if (reap_one(*it, status)) {
      ended.push_back({*it, status});
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return ended;
}

std::vector<ChildPool::Ended> ChildPool::wait(std::chrono::milliseconds timeout) {
  const auto deadline = PoolClock::now() + timeout;
  const int signal_before = StopSignals::received();  // one seen before does not end every wait at once
  for (;;) {
    std::vector<Ended> ended = reap();
    if (!ended.empty() || running_.empty() || StopSignals::received() != signal_before ||
        PoolClock::now() >= deadline) {
      return ended;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void ChildPool::signal_all(int signal) {
  for (pid_t pid : running_) kill(pid, signal);
}

void ChildPool::stop(std::chrono::seconds grace, const std::function<void(pid_t)>& on_kill) {
  signal_all(SIGTERM);
  const auto deadline = PoolClock::now() + grace;
  for (reap(); !running_.empty(); reap()) {
    if (PoolClock::now() > deadline) return kill_all(on_kill);
    std::this_thread::sleep_for(kPollInterval);
  }
}

void ChildPool::kill_all(const std::function<void(pid_t)>& on_kill) {
  for (pid_t pid : running_) {
    if (on_kill) on_kill(pid);
    kill(pid, SIGKILL);
  }
  for (pid_t pid : running_) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  running_.clear();
}

int run_in_child(const std::string& what, const std::function<void()>& body) {
  ChildPool pool;
  pool.start(what, body);
  int status = 0;
  while (!pool.empty()) {
    for (const ChildPool::Ended& ended : pool.wait(std::chrono::seconds(1))) status = ended.status;
  }
  return status;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace locosim
