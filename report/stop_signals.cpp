// StopSignals: a flag set from the signal handler, read by the driver's loop (see stop_signals.hpp).
#include "report/stop_signals.hpp"

#include <pthread.h>
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

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kSignals) sigaddset(&set, s);
  return set;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &old_[i]);
  const sigset_t stops = stop_set();
  pthread_sigmask(SIG_UNBLOCK, &stops, &old_mask_);
}

StopSignals::~StopSignals() {
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

void ignore_file_size_signal() { std::signal(SIGXFSZ, SIG_IGN); }

int StopSignals::received() { return g_received; }

pid_t StopSignals::fork_child() {
  const sigset_t stops = stop_set();
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {  // the parent (or a failed fork): a signal that came meanwhile reaches the handler now
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return pid;
  }
  for (int s : kSignals) std::signal(s, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) std::_Exit(1);  // the parent died before prctl took effect
  pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);  // one sent meanwhile takes its default action now
  return 0;
}

void StopSignals::block_in_this_thread() {
  const sigset_t stops = stop_set();
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
}

}  // namespace locosim
