// How much real time a process spends in LibTorch work, by kind: what `locosim run --cost` sets
// against the process's whole time to show the simulator's own overhead. Process-wide, any thread.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace locosim {

struct TorchTime {
  std::atomic<int64_t> steps_ns{0};      // the workers' real steps (forward, backward, a policy's own work)
  std::atomic<int64_t> optimizer_ns{0};  // optimizer_step: clipping and the inner optimizer
  std::atomic<int64_t> eval_ns{0};       // evaluation
};
inline TorchTime& torch_time() {
  static TorchTime time;
  return time;
}

// Adds the time from its construction to its destruction to `into`.
class TorchTimer {
 public:
  explicit TorchTimer(std::atomic<int64_t>& into) : into_(into), since_(std::chrono::steady_clock::now()) {}
  ~TorchTimer() {
    into_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since_).count();
  }
  TorchTimer(const TorchTimer&) = delete;
  TorchTimer& operator=(const TorchTimer&) = delete;

 private:
  std::atomic<int64_t>& into_;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace locosim
