// StopSignals: a flag set from the signal handler, read by the driver's loop (see stop_signals.hpp).
#include "report/stop_signals.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

namespace locosim {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t g_received = 0;

void on_signal(int signal) {
  if (g_received == 0) g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &old_[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

int StopSignals::received() { return g_received; }

void StopSignals::child_defaults(pid_t parent) {
  for (int s : kSignals) std::signal(s, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) std::_Exit(1);  // the parent died before prctl took effect
}

}  // namespace locosim
