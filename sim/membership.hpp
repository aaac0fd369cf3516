// Workers on a changing world: who is in the group, who is away, and how one comes back. The world
// side of membership (policies see only the Transport): a worker whose host fails is lost with the
// work it had not committed; when its host is back it downloads the group's state from a live
// member, charged on their links, then goes in at the group's next handover point (a sync, committed
// or given up, with nothing in flight) and continues from the group's step; to a group every worker
// has left, it brings the last handover point (from the relay, or its own disk) and redoes the steps
// since. Its data shard is its own: batches are not handed to others while it is away, and it
// resumes its own stream when back. A worker cut off from the parameter server for good (CutOff) is
// lost like one whose host failed.
#pragma once
#include <simgrid/forward.h>

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/train_loop.hpp"
#include "sim/sim_transport.hpp"

namespace locosim {

// One worker's objects; they live until the engine has run, across the worker's absences.
struct SimWorker {
  TinyLlama model{nullptr};
  std::unique_ptr<SimTransport> transport;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<TrainLoop> loop;
  bool started = false;      // its actor has run at least once
  bool running = false;      // its TrainLoop is running (not away, not downloading)
  bool done = false;         // it has trained every step
  double away_since_s = -1;  // >= 0 while it is out of the group
};

// The group's state at a handover point: what a joiner downloads.
struct GroupSnapshot {
  std::string state;          // the policy's archive (Policy::save)
  double bytes = 0;           // what a joiner downloads: the archive's tensor data (its metadata is not
                              // priced as the target model), the same in a timing-only run
  int64_t steps_done = 0;
  uint64_t next_collective = 0;
};

class Membership {
 public:
  // wire_scale prices the download like every other transfer; can_fail: the world may fail hosts
  // or links (world_can_fail), else membership never changes and nothing here costs anything.
  Membership(SimWorld& world, std::vector<SimWorker>& workers, double wire_scale, bool can_fail);

  // The body of worker `rank`'s actor: trains from step 0 at time 0, or joins the group. Restarted
  // by SimGrid whenever the worker's host comes back on.
  void run_worker(int rank);
  // Host::on_state_change: a worker whose host goes off is lost.
  void host_changed(const simgrid::s4u::Host& host);
  // TrainLoop::on_handover_point of worker `rank`.
  void handover_point(int rank, int64_t steps_done);
  // After the engine has run: records the absences still open at `end_s`.
  void close(double end_s);

  // Whether a group that every worker has left can start again from its last handover point (the
  // policy hands over: Policy::handover_ready), when one of them comes back.
  bool can_restart() const { return checkpoint_ != nullptr && !over_; }
  int lost() const { return lost_; }
  int joined() const { return joined_; }
  // Why workers left the run while their hosts were on (SimTransport's CutOff), in order.
  const std::vector<std::string>& cut_off() const { return cut_off_; }

 private:
  void lose(int rank);
  void join(int rank);
  // The lowest rank training in the group, or -1 when no one is.
  int first_running() const;
  std::shared_ptr<const GroupSnapshot> snapshot(int rank, int64_t steps_done) const;
  // Lets every ready joiner in, on `snapshot`.
  void admit_ready(const std::shared_ptr<const GroupSnapshot>& snapshot);
  // Every worker is done or away: joiners still waiting give up.
  void end_if_over();

  SimWorld& world_;
  std::vector<SimWorker>& workers_;
  double wire_scale_;
  bool can_fail_;
  std::set<int> joining_;                            // ranks coming back (downloading, or ready)
  std::deque<int> ready_;                            // joiners that have the state, in arrival order
  std::map<int, std::shared_ptr<const GroupSnapshot>> tickets_;  // by joiner: its admission, until taken
  std::shared_ptr<const GroupSnapshot> checkpoint_;  // the group's state at its latest handover point
  std::map<const simgrid::s4u::Host*, int> rank_of_;
  std::vector<simgrid::s4u::ActorPtr> actors_;       // by rank: its current actor
  std::vector<std::string> cut_off_;
  bool over_ = false;
  int lost_ = 0;
  int joined_ = 0;
};

}  // namespace locosim
