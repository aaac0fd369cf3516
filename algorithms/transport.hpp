// The seam between the algorithms and the world: collectives on tensors, started now and waited on
// later, the worker's identity, and its clock. The simulator (sim/) and the real cluster (real/)
// each implement it; algorithms/local_transport.hpp is an in-process one for tests.
#pragma once
#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

#include "algorithms/codec.hpp"

namespace locosim {

// How tensors travel: the bytes charged are the codec's bytes × scale. scale > 1 prices the small
// model that really trains as a larger one (timing.params / model params).
struct Wire {
  WireFormat format = WireFormat::fp32;
  double scale = 1.0;
};

// A collective in flight. wait() blocks until it ends and returns whether it completed: true, its
// results are in place; false, it failed (a member was lost, a link was cut: what a failed NCCL or
// Gloo call reports) and its results are untouched, for the caller to decide what to do (see
// commit_or_redo). Calling wait() again returns the same answer. Results land only through wait():
// every Pending must be waited on.
class Pending {
 public:
  Pending() = default;  // already complete
  explicit Pending(std::function<bool()> wait_fn) : wait_fn_(std::move(wait_fn)) {}
  Pending(Pending&&) noexcept = default;
  Pending& operator=(Pending&&) noexcept = default;

  [[nodiscard]] bool wait() {
    if (wait_fn_) {
      auto fn = std::move(wait_fn_);
      wait_fn_ = nullptr;
      completed_ = fn();
    }
    return completed_;
  }
  bool done() const { return !wait_fn_; }

 private:
  std::function<bool()> wait_fn_;
  bool completed_ = true;
};

// The server side of asynchronous training (asynchronous DiLoCo): it holds the global state and
// applies each worker's push as it comes. The transport hosts one for the whole group (on the
// platform's relay, or rank 0's host when there is none; on rank 0 on a real cluster) and runs the
// exchange in windows, the grace period of Liu et al. 2024 (arXiv 2401.09135): a window holds the
// pushes that arrive within `grace_s` of its first one, or closes as soon as every worker still
// training has pushed. Its pushes are applied one by one in rank order (arrivals within the grace
// period count as simultaneous, so results do not depend on timing jitter below it), then each of
// them gets its reply, made after the window's last push. grace_s = 0: every push on its own.
struct ServerUpdate {   // one push applied, for the run's updates.csv
  double time_s = 0;    // when it was applied
  int worker = 0;
  int64_t version = 0;  // the server's update count after it
  int64_t staleness = 0;  // updates applied between the worker's last reply and this push
  int64_t steps = 0;    // the worker's inner steps in it
};

class ParameterServer {
 public:
  virtual ~ParameterServer() = default;
  virtual void apply(int rank, const std::vector<torch::Tensor>& up, double now_s) = 0;
  virtual std::vector<torch::Tensor> reply(int rank) = 0;
  // Whether the run's work is all in: a worker whose reply says so stops.
  virtual bool done() const = 0;
  virtual const std::vector<ServerUpdate>& updates() const = 0;

  // Servers that run windows of their own (ServerExchange::own_windows, the quorum syncer): the
  // transport hands each push to arrive() when it reaches the server, at now_s, with the ranks then in
  // the group, and asks the server when a push is merged; it never calls apply(). The server knows whom
  // its replies told to stop. The defaults throw std::logic_error (a server without windows of its own).
  virtual void arrive(int rank, const std::vector<torch::Tensor>& up, double now_s, const std::vector<int>& members);
  // Merges the open window if its rule is met at now_s (its deadline has come, or every rank in
  // `members` still training has pushed into it).
  virtual void tick(double now_s, const std::vector<int>& members);
  // When the open window merges if no push arrives before; infinity while it waits for pushes.
  virtual double deadline_s() const;
  // Whether every push `rank` made is merged.
  virtual bool merged(int rank) const;
  // Whether a reply told `rank` to stop.
  virtual bool stopped(int rank) const;
};

inline void ParameterServer::arrive(int, const std::vector<torch::Tensor>&, double, const std::vector<int>&) {
  throw std::logic_error("this parameter server has no windows of its own (ParameterServer::arrive)");
}
inline void ParameterServer::tick(double, const std::vector<int>&) {
  throw std::logic_error("this parameter server has no windows of its own (ParameterServer::tick)");
}
inline double ParameterServer::deadline_s() const {
  throw std::logic_error("this parameter server has no windows of its own (ParameterServer::deadline_s)");
}
inline bool ParameterServer::merged(int) const {
  throw std::logic_error("this parameter server has no windows of its own (ParameterServer::merged)");
}
inline bool ParameterServer::stopped(int) const {
  throw std::logic_error("this parameter server has no windows of its own (ParameterServer::stopped)");
}

struct ServerExchange {
  double up_bytes = 0;    // what the push weighs on the wire (Wire::scale included)
  double down_bytes = 0;  // what the reply weighs
  double grace_s = 0;
  // The server runs its own windows (ParameterServer::arrive): grace_s is unused; with reply_at_once
  // the reply leaves as soon as the push is in, with the server's state at that moment (the worker
  // never waits for a window), else once the push is merged.
  bool own_windows = false;
  bool reply_at_once = false;
  // Makes the group's server on the first push of the run (called once, by the transport).
  std::function<std::unique_ptr<ParameterServer>()> make_server;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Membership: a collective runs among the workers that are in the group when it starts (on a
  // changing world some may be away); the mean is over their contributions. A member lost during the
  // collective, or a link cut under it, fails it for every member (wait() returns false).

  // Averages `xs` across the members, in place, when the returned Pending is waited on.
  // The contributions are taken (rounded to w.format) when the call is made, so the caller may keep
  // changing xs until wait(). The mean is summed in fp32 in rank order (bit-identical everywhere)
  // and rounded to w.format again, as the all-gather half of the collective carries it.
  // REQUIRES: every worker makes the same sequence of collective calls with tensors of the same shapes.
  virtual Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) = 0;

  // Gathers every member's `mine` into out[rank] (out is resized to world_size(); out[rank()] is a
  // copy of mine; a rank that is not a member leaves its entry empty) when the returned Pending is
  // waited on. On failure, out still receives the contributions of the members that are alive
  // (DeMo proceeds with what arrived). The tensors are sent as they are: the caller
  // has already encoded them (indices, quantized values) and says what they weigh on the wire in
  // `bytes` (including any Wire::scale pricing). Contributions are taken when the call is made.
  // REQUIRES: as for all_reduce_mean; `out` outlives the wait.
  virtual Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                             std::vector<std::vector<torch::Tensor>>& out) = 0;

  // Subgroups (gossip methods: NoLoCo's random groups, a pairwise exchange). The same collectives among
  // the ranks of `group` only (in rank order, the caller among them), priced on the routes between
  // their hosts. The members are those of `group` in the group when it starts; a member lost, or a link
  // cut under it, fails it for its members, as for the whole group.
  // REQUIRES: the ranks of `group` call its collectives in the same order (redone ones included), each
  // naming the same `group`; whole-group calls keep their one sequence on every worker. A worker in no
  // group at some point just makes no call (the real backend asks more: see C10dTransport).
  // A backend without them throws std::logic_error.
  virtual Pending all_reduce_mean_among(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w);
  virtual Pending all_gather_among(const std::vector<int>& group, const std::vector<torch::Tensor>& mine,
                                   double bytes, std::vector<std::vector<torch::Tensor>>& out);
  // A pairwise exchange: an all-gather among this rank and `peer` (who names this rank): out[peer] is
  // the peer's `mine`. peer == rank() is a group of one.
  Pending exchange(int peer, const std::vector<torch::Tensor>& mine, double bytes,
                   std::vector<std::vector<torch::Tensor>>& out);

  // Asynchronous exchange with the group's server (see ParameterServer): sends `up`, waits for its
  // window to close and receives the server's reply into `down`. Returns false if the exchange failed
  // (a link cut, the server's host lost): `down` is untouched (the push may have been applied). A backend without
  // a server throws std::logic_error.
  virtual bool push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                         const ServerExchange& exchange);

  // Runs `work` (the real computation) and charges `flops` of this worker's compute time.
  virtual void compute(double flops, const std::function<void()>& work) = 0;

  // Seconds since the start of training: simulated on the simulator, wall-clock on a real cluster.
  virtual double now_s() const = 0;

  // Calls `fn` with now_s(). A transport may let compute() return before the step's time has passed
  // (the simulator's timing-only steps: SimWorld::marks); it then calls `fn` once the steps computed
  // before this call have passed, in the order asked, at the latest before anything else asked of it.
  // For what the worker notes between its steps (a metric row's time) without waiting for the clock:
  // `fn` asks nothing of the transport.
  virtual void at_now(std::function<void(double now_s)> fn) { fn(now_s()); }
};

// The commit-or-redo rule of every synchronous policy (torchft's should_commit): `attempt` starts a
// collective on tensors it leaves untouched on failure; a failed attempt is redone among the members
// still in the group, up to `max_attempts` times. Returns whether one completed (commit) or not.
// The order in which a window's pushes are applied, and their replies (shared by the transports).
class ServerWindow {
 public:
  bool open() const { return !pushes_.empty(); }
  size_t size() const { return pushes_.size(); }
  void add(int rank, std::vector<torch::Tensor> up);
  // Applies the pushes in rank order at `now_s` and keeps each one's reply; empties the window and
  // returns the ranks it held. If the server is then done, those ranks are told to stop.
  std::vector<int> close(ParameterServer& server, double now_s);
  // The reply kept for `rank` (taken once).
  std::vector<torch::Tensor> take_reply(int rank);
  // Windows closed so far (a waiting worker's window has closed once this passes its value at its push).
  uint64_t closed() const { return closed_; }
  // Whether `rank` was told to stop; how many were.
  bool stopped(int rank) const { return stopped_.count(rank) > 0; }
  int stopped_count() const { return static_cast<int>(stopped_.size()); }

 private:
  std::map<int, std::vector<torch::Tensor>> pushes_;  // by rank
  std::map<int, std::vector<torch::Tensor>> replies_;
  uint64_t closed_ = 0;
  std::set<int> stopped_;
};

bool commit_or_redo(const std::function<Pending()>& attempt, int max_attempts = 3);

// The reference reduction every transport uses: mean over contributions[rank][i] in rank order,
// rounded to the wire format. contributions are already rounded to it (through_wire); a rank with no
// contribution (not a member) is skipped. REQUIRES: at least one contribution.
std::vector<torch::Tensor> mean_in_rank_order(const std::vector<std::vector<torch::Tensor>>& contributions,
                                              WireFormat format);

// What all_gather hands every caller: each rank's contribution, cloned (so callers own their copies).
std::vector<std::vector<torch::Tensor>> gathered_copy(const std::vector<std::vector<torch::Tensor>>& contributions);

// Checks a subgroup named by `rank` (in rank order, no repeats, within the world, `rank` among them);
// throws std::logic_error naming what is wrong.
void check_group(const std::vector<int>& group, int rank, int world_size);

// Sum of the sizes in bytes of xs on the wire (before Wire::scale).
double wire_bytes(const std::vector<torch::Tensor>& xs, WireFormat format);

}  // namespace locosim
