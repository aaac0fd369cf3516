// Liveness on a real cluster: every rank bumps a counter in the job's store and watches the others'.
// A rank whose counter stops moving is silent: lost (killed, its machine gone) or frozen.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace locosim {

// Every 100 ms the rank bumps "beat/<rank>" and reads every other rank's counter, on its own
// connection to the store (a main thread blocked in a store call or a collective never stops it).
// Counters, not timestamps: clock skew between machines cannot mislead; silence is measured on this
// rank's own clock, from the last sweep that read the counters (a starved watcher sees no one silent).
class Heartbeat {
 public:
  // Starts beating and watching on `store`, a connection to the job's store of its own.
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Whether rank r's counter has not moved for `window` (never for this rank itself). Once the store
  // is unreachable, rank 0 (its host) is silent and no other rank is.
  bool silent(int r, std::chrono::milliseconds window) const;
  // Whether the store (rank 0) could not be reached by the last sweep.
  bool store_lost() const { return store_lost_; }
  // "rank 2, rank 3": the other ranks silent for `window`; "rank 0 (its store is unreachable)" when
  // the store is gone; "" when every rank beats.
  std::string silent_ranks(std::chrono::milliseconds window) const;

 private:
  void sweep(int64_t beat);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_size_;
  std::vector<bool> seen_;                                           // the watcher's own: key set
  mutable std::mutex mutex_;
  std::vector<int64_t> last_beat_;                                   // -1: not seen yet
  std::vector<std::chrono::steady_clock::time_point> last_change_;  // when last_beat_ last moved
  std::chrono::steady_clock::time_point last_sweep_;
  std::atomic<bool> store_lost_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace locosim
