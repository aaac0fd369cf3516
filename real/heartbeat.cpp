// Heartbeat: a counter per rank in the store, bumped and watched by a thread on its own connection.
#include "real/heartbeat.hpp"

#include "real/store_format.hpp"

namespace locosim {

Heartbeat::Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size)
    : store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      seen_(world_size, false),
      last_beat_(world_size, -1),
      last_change_(world_size, std::chrono::steady_clock::now()),
      last_sweep_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] {
    for (int64_t beat = 1; !stop_; ++beat) {
      try {
        sweep(beat);
      } catch (...) {
        store_lost_ = true;  // the store's host (rank 0) is gone: the training loop will report it
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

Heartbeat::~Heartbeat() {
  stop_ = true;
  thread_.join();
}

void Heartbeat::sweep(int64_t beat) {
  store_->set("beat/" + std::to_string(rank_), to_bytes(std::vector<int64_t>{beat}));
  std::vector<int64_t> beats(world_size_, -1);
  for (int r = 0; r < world_size_; ++r) {
    const std::string key = "beat/" + std::to_string(r);
    if (r == rank_) {
      beats[r] = beat;
    } else if (seen_[r] || store_->check({key})) {  // get() would block on a key not set yet
      const auto value = from_bytes<int64_t>(store_->get(key));
      beats[r] = value.size() == 1 ? value[0] : 0;
      seen_[r] = true;
    }
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  for (int r = 0; r < world_size_; ++r) {
    if (beats[r] != last_beat_[r]) {
      last_beat_[r] = beats[r];
      last_change_[r] = now;
    }
  }
  last_sweep_ = now;
}

bool Heartbeat::silent(int r, std::chrono::milliseconds window) const {
  if (r == rank_) return false;
  if (store_lost_) return r == 0;
  std::lock_guard<std::mutex> lock(mutex_);
  return last_sweep_ - last_change_.at(r) >= window;
}

std::string Heartbeat::silent_ranks(std::chrono::milliseconds window) const {
  if (store_lost_) return rank_ == 0 ? "" : "rank 0 (its store is unreachable)";
  std::string out;
  for (int r = 0; r < world_size_; ++r) {
    if (silent(r, window)) out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r);
  }
  return out;
}

}  // namespace locosim
