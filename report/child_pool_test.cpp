// ChildPool: each child's exit reaches the driver once, with its status; stop() gives SIGTERM its
// grace before SIGKILL; no child outlives its pool.
#include "report/child_pool.hpp"
#include "report/stop_signals.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <stdexcept>
#include <vector>

#include "tests/doctest_torch.hpp"

using locosim::ChildPool;

namespace {

// Every exit of `pool`'s children, waiting until none is left (at most 30 s).
std::map<pid_t, int> wait_for_all(ChildPool& pool) {
  std::map<pid_t, int> status_of;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pool.empty() && std::chrono::steady_clock::now() < give_up) {
    for (const ChildPool::Ended& e : pool.wait(std::chrono::milliseconds(200))) {
      CHECK(status_of.count(e.pid) == 0);  // reported once
      status_of[e.pid] = e.status;
    }
  }
  return status_of;
}

// A child that ignores SIGTERM and waits to be killed.
void deaf_child() {
  signal(SIGTERM, SIG_IGN);
  sleep(30);
  std::_Exit(0);
}

}  // namespace

TEST_CASE("child pool: every child's exit is reported once, with its code or signal") {
  ChildPool pool;
  const pid_t zero = pool.start("zero", [] { std::_Exit(0); });
  const pid_t three = pool.start("three", [] { std::_Exit(3); });
  const pid_t thrower = pool.start("thrower", [] { throw std::runtime_error("lost"); });
  const pid_t killed = pool.start("killed", [] {
    sleep(30);
    std::_Exit(0);
  });
  CHECK(pool.running().size() == 4);
  kill(killed, SIGKILL);
  const std::map<pid_t, int> status_of = wait_for_all(pool);
  REQUIRE(status_of.size() == 4);
  CHECK(pool.empty());
  CHECK(locosim::describe_exit(status_of.at(zero)) == "exited with code 0");
  CHECK(locosim::describe_exit(status_of.at(three)) == "exited with code 3");
  CHECK(locosim::describe_exit(status_of.at(thrower)) == "exited with code 127");
  CHECK(locosim::describe_exit(status_of.at(killed)) == "was killed by signal 9");
  CHECK(pool.reap().empty());
}

TEST_CASE("child pool: stop gives SIGTERM its grace, then kills and names only the children still there") {
  ChildPool pool;
  const pid_t polite = pool.start("polite", [] {
    sleep(30);  // SIGTERM's default action ends it
    std::_Exit(0);
  });
  const pid_t deaf = pool.start("deaf", deaf_child);
  usleep(200 * 1000);  // the deaf child has ignored SIGTERM by now
  std::vector<pid_t> named;
  const auto started = std::chrono::steady_clock::now();
  pool.stop(std::chrono::seconds(1), [&](pid_t pid) { named.push_back(pid); });
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(pool.empty());
  CHECK(named == std::vector<pid_t>{deaf});
  CHECK(took_s >= 1.0);
  CHECK(took_s < 10.0);
  // Both are reaped: neither pid is a child of this process any more.
  int status = 0;
  CHECK(waitpid(polite, &status, WNOHANG) == -1);
  CHECK(waitpid(deaf, &status, WNOHANG) == -1);
}

TEST_CASE("child pool: a child still running when its pool ends is killed and reaped") {
  pid_t deaf = 0;
  {
    ChildPool pool;
    deaf = pool.start("deaf", deaf_child);
  }
  int status = 0;
  CHECK(waitpid(deaf, &status, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  CHECK(kill(deaf, 0) == -1);  // gone, not a zombie (a zombie still takes signals)
}

TEST_CASE("child pool: after a stop signal, wait still waits its time instead of returning at once") {
  // The launcher polls wait() while it gives its ranks their grace after SIGTERM: returning at once on
  // the signal already seen would spin a core for those seconds.
  locosim::StopSignals stop_signals;
  kill(getpid(), SIGINT);
  for (int i = 0; i < 100 && !locosim::StopSignals::received(); ++i) usleep(10000);
  REQUIRE(locosim::StopSignals::received() == SIGINT);
  ChildPool pool;
  pool.start("sleeper", [] {
    sleep(30);
    std::_Exit(0);
  });
  const auto started = std::chrono::steady_clock::now();
  CHECK(pool.wait(std::chrono::milliseconds(300)).empty());
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(300));
}
