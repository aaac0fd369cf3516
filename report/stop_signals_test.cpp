// StopSignals: the parent's stop signals become a flag, and its children die of the SIGTERM it sends
// them, however early it comes.
#include "report/stop_signals.hpp"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "tests/doctest_torch.hpp"

using locosim::StopSignals;

namespace {

// How `pid` ended: its exit code, or 128 + the signal that killed it.
int reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("stop signals: a SIGTERM sent the moment fork_child returns kills the child") {
  StopSignals stop_signals;
  // Sent before the child has run at all, the signal used to reach the parent's handler in the child,
  // which then trained on while its parent waited for it forever. Many tries: the child is usually
  // not yet scheduled when the parent's kill comes.
  for (int i = 0; i < 50; ++i) {
    const pid_t pid = StopSignals::fork_child();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      sleep(30);  // a child that outlives the signal fails the test (after 30 s, not forever)
      std::_Exit(0);
    }
    kill(pid, SIGTERM);
    REQUIRE(reap(pid) == 128 + SIGTERM);
  }
  CHECK(StopSignals::received() == 0);  // the parent's own flag: untouched
}

TEST_CASE("stop signals: the parent receives them even when it inherited them blocked") {
  sigset_t stops, before;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  {
    StopSignals stop_signals;
    kill(getpid(), SIGINT);
    for (int i = 0; i < 100 && !StopSignals::received(); ++i) usleep(10000);  // another thread may take it
    CHECK(StopSignals::received() == SIGINT);
    // The children of such a parent still die of SIGTERM.
    const pid_t pid = StopSignals::fork_child();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      sleep(30);
      std::_Exit(0);
    }
    kill(pid, SIGTERM);
    CHECK(reap(pid) == 128 + SIGTERM);
  }
  sigset_t after;
  pthread_sigmask(SIG_SETMASK, &before, &after);
  CHECK(sigismember(&after, SIGINT) == 1);  // the mask it had is restored with the handlers
}
