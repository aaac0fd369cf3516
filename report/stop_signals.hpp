// StopSignals: while one lives, SIGINT, SIGTERM and SIGHUP only raise a flag, so a parent process
// can stop its children and remove their unfinished folders before it exits (Interrupted).
#pragma once
#include <csignal>
#include <stdexcept>
#include <string>

namespace locosim {

// Thrown by a driver that stopped on a signal, after cleaning up; the CLI exits 128 + signal.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal)
      : std::runtime_error("interrupted by signal " + std::to_string(signal) + "; unfinished run folders removed"),
        signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

class StopSignals {
 public:
  StopSignals();   // installs the handlers (without SA_RESTART: a blocking call returns EINTR)
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received since construction, or 0.
  static int received();

  // For a forked child: default actions again, and SIGTERM when the parent dies (even by SIGKILL),
  // so that no orphan keeps running. Exits at once if the parent is already gone.
  static void child_defaults(pid_t parent);

 private:
  struct sigaction old_[3];
};

}  // namespace locosim
