// C10dTransport's side of a restarted rank coming back (see the header's protocol): the keys a
// restarted rank reads to know the job runs, rank 0's decision at a handover point, the re-form that
// lets the joiner in, and the joiner's wait for its admission and the group's state.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <thread>

#include "real/c10d_transport.hpp"
#include "real/store_format.hpp"

namespace locosim {
namespace {

using Clock = std::chrono::steady_clock;

// How often a restarted rank looks for its admission.
constexpr std::chrono::milliseconds kJoinPoll{50};

}  // namespace

bool job_in_progress(c10d::Store& store) { return store.check({"job/started"}); }
bool job_over(c10d::Store& store) { return store.check({"written"}); }

bool wait_until_out(c10d::Store& store, int rank) {
  while (true) {
    if (job_over(store)) return false;
    if (store.check({"group/current"})) {
      const auto current = from_bytes<int64_t>(store.get("group/current"));
      if (std::find(current.begin() + 1, current.end(), rank) == current.end()) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void C10dTransport::handover_point(int64_t steps_done, const std::function<std::string()>& save) {
  auto& store = *job_.store;
  const std::string admit = group_key(epoch_, "admit");
  if (store.check({admit})) {
    const auto decided = from_bytes<int64_t>(store.get(admit));
    // Decided at rank 0's handover point after collective D - 1: the re-form is at the next one.
    if (next_seq_ <= decided.at(0)) return;
    std::vector<int> joiners(decided.begin() + 1, decided.end());
    std::vector<int> next = members_;
    next.insert(next.end(), joiners.begin(), joiners.end());
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    const int epoch = epoch_ + 1;
    if (job_.rank == 0) {
      const std::string state = save();
      for (int j : joiners) {
        double lost_at = 0;
        for (const auto& loss : lost_) {
          if (loss.rank == j) lost_at = loss.noticed_s;
        }
        const double now = now_s();
        std::vector<int64_t> meta = {epoch, steps_done, micros(now), micros(lost_at)};
        meta.insert(meta.end(), next.begin(), next.end());
        store.set(join_key("state", j), std::vector<uint8_t>(state.begin(), state.end()));
        store.set(join_key("admit", j), to_bytes<int64_t>(meta));
        store.deleteKey("join/request/" + std::to_string(j));
        joined_.push_back({j, now});
      }
    }
    open_epoch(epoch, std::move(next));
    return;
  }
  if (job_.rank != 0) return;
  std::vector<int64_t> decision = {next_seq_};
  for (int r = 1; r < job_.world_size; ++r) {
    if (std::find(members_.begin(), members_.end(), r) != members_.end()) continue;
    if (store.check({"join/request/" + std::to_string(r)})) decision.push_back(r);
  }
  if (decision.size() > 1) store.set(admit, to_bytes<int64_t>(decision));
}

std::optional<C10dTransport::Admission> C10dTransport::await_admission() {
  auto& store = *job_.store;
  const int me = job_.rank;
  store.deleteKey(join_key("admit", me));  // an earlier life's
  store.set("join/request/" + std::to_string(me), {1});
  while (!store.check({join_key("admit", me)})) {
    if (job_over(store)) return std::nullopt;
    std::this_thread::sleep_for(kJoinPoll);
  }
  const auto meta = from_bytes<int64_t>(store.get(join_key("admit", me)));
  // This rank's clock from now on is rank 0's (its rows merge with the group's).
  start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(meta.at(2)));
  Admission a;
  a.epoch = static_cast<int>(meta.at(0));
  a.steps_done = meta.at(1);
  a.lost_at_s = seconds(meta.at(3));
  for (size_t i = 4; i < meta.size(); ++i) a.members.push_back(static_cast<int>(meta[i]));
  a.download_start_s = now_s();
  const std::vector<uint8_t> state = store.get(join_key("state", me));
  a.download_end_s = now_s();
  store.deleteKey(join_key("state", me));
  a.state.assign(state.begin(), state.end());
  return a;
}

}  // namespace locosim
