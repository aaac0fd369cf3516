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

// Ignores SIGXFSZ for this process and the ones it starts (an ignored signal stays ignored across
// fork and exec): a write past the file-size limit (ulimit -f) then fails with EFBIG, which
// OutputFile reports naming the file, instead of killing the process without a word. Call first in main.
void ignore_file_size_signal();

class StopSignals {
 public:
  // Installs the handlers (without SA_RESTART: a blocking call returns EINTR) and unblocks the
  // signals, should this process have inherited them blocked.
  StopSignals();
  ~StopSignals();  // restores the previous handlers and signal mask
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received since construction, or 0.
  static int received();

  // fork(2) for a driver that stops its children with SIGTERM. The child has the default actions
  // again (a SIGTERM sent the moment fork returns kills it: the signals stay blocked until then, so
  // none reaches the parent's handler in the child) and gets SIGTERM when the parent dies, even by
  // SIGKILL, so that no orphan keeps running; it exits at once if the parent is already gone.
  static pid_t fork_child();

  // Blocks the stop signals in the calling thread, for a helper thread of a driver: the signals then
  // reach the driver's own thread, whose blocking calls they interrupt.
  static void block_in_this_thread();

 private:
  struct sigaction old_[3];
  sigset_t old_mask_;
};

}  // namespace locosim
