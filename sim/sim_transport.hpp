// The simulator's Transport: real numerics, SimGrid time. Each collective runs its flows in a
// helper actor on the worker's host, so it proceeds while the worker computes; wait() joins it (on a
// world that never fails, a rank that waits before doing anything else runs them itself).
// On a changing world (sim/world.hpp) a collective runs among the workers in the group when it
// starts, and fails for all of them when a member is lost or a link under it is cut.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"
#include "config/platform.hpp"
#include "config/world.hpp"
#include <simgrid/forward.h>

namespace locosim {

// A collective's key: the whole group's by its sequence number (the same on every worker); a subgroup's
// by the serial number it got when its first member arrived (a group's members call its collectives in
// the same order, so each joins the oldest one of its group it has not joined yet; redone ones included).
struct CollectiveId {
  bool subgroup = false;
  uint64_t n = 0;
  bool operator<(const CollectiveId& o) const { return subgroup != o.subgroup ? o.subgroup : n < o.n; }
  bool operator==(const CollectiveId& o) const { return subgroup == o.subgroup && n == o.n; }
};

// A collective in flight: its members, each member's contribution, the mean once computed.
struct SimCollective {
  std::vector<int> named;                                  // the subgroup its first member named; empty: all
  std::vector<int> joined;                                 // a subgroup's: the members that arrived
  std::vector<int> members;                                // fixed by the first member to arrive
  std::shared_ptr<const std::vector<int>> shared_members;  // the same, for the sides' flows (no copy per side)
  std::vector<std::vector<torch::Tensor>> contributions;   // by rank; empty for a non-member
  std::vector<aid_t> flows;                                // the actors carrying its sides, one per side
  uint64_t slot = 0;                                       // whose mailboxes its flows use (SimWorld::free_slots)
  size_t arrived = 0;                                      // members that called it
  size_t sides_done = 0;                                   // helpers whose flows ended without failure
  std::vector<bool> unread;                                // by rank: a member that has not taken the result yet
  size_t unread_left = 0;                                  // how many
  std::vector<torch::Tensor> result;
  bool failed = false;
  double failed_at_s = 0;

  // Every member arrived and every side's flows ended: nothing can fail it any more, and a member
  // lost now (before taking the result) does not undo it for the others.
  bool complete() const { return arrived == members.size() && sides_done == flows.size(); }
  // `rank` took the result, or will never take it; returns whether every member has.
  bool read_by(int rank) {
    if (unread[static_cast<size_t>(rank)]) {
      unread[static_cast<size_t>(rank)] = false;
      --unread_left;
    }
    return unread_left == 0;
  }
};

class StepPool;
class SidePool;
class StepMarks;
struct SideRun;

// Thrown by SimTransport::push_pull when the worker's exchange with the server failed and cannot
// succeed any more: the server already holds the run's work (it is done: the job is over), or the
// world keeps the route between them off for good. The worker leaves the run (Membership counts it
// lost); without this it would train and push forever, and the run would never end.
struct CutOff : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the workers of one simulated run share (all actors run on one thread: no locks).
struct SimWorld {
  std::vector<simgrid::s4u::Host*> hosts;  // by rank
  Recorder* recorder = nullptr;
  CollectiveChoice collectives;            // how collectives travel (the scenario's `network:`)
  simgrid::s4u::Host* relay = nullptr;     // REQUIRED by the relay algorithms
  std::vector<std::vector<int>> sites;     // ranks by site (site_groups): REQUIRED by hierarchical
  std::vector<bool> in_group;              // by rank: a member of the collectives that start from now on
                                           // (empty: every rank, a world that never changes)
  double failure_timeout_s = 10;           // how long a member takes to notice a failed collective
  // Members may fail or be cut off: a member takes a collective's result only once every member's
  // flows have ended, so that all members agree on commit (torchft's should_commit). A world that
  // never fails leaves it off: each member takes the result as soon as its own flows end.
  bool agree_on_commit = false;
  // Timing only (numerics: none): compute is charged but its work not run, collectives move their
  // bytes but keep no contributions and compute no mean (the policies' tensors are on the meta
  // device); all-gathers still hand over what was sent (a timed round's step counts).
  bool timing_only = false;
  // Where the workers' real steps run while their simulated compute goes on; null: in the actor,
  // before the simulated compute (sim/step_pool.hpp).
  StepPool* pool = nullptr;
  // Actors kept for the run to carry the collectives' sides (sim/side_pool.hpp): on a world that never
  // fails. Null: an actor made per side, which a failed collective can kill.
  SidePool* sides = nullptr;
  // Where a timing-only worker's steps run as marks on the clock (sim/step_marks.hpp): hosts whose
  // speed never changes, on a world that never fails. compute() then queues the step, and its time
  // passes when the worker next asks the transport for anything else (at_now() waits its turn).
  // Null: each step is an exec, waited on at once.
  StepMarks* marks = nullptr;
  std::map<CollectiveId, SimCollective> in_flight;
  // The mailboxes a collective's flows use are named by a slot, not by the collective: SimGrid 3.32
  // keeps every mailbox it ever made (about 1 KiB each), which at 4096 workers x 100 rounds was most of
  // the run's memory. A slot goes back to free_slots once every side of the collective holding it ended
  // without failure (its mailboxes are empty then: every message sent was received); a failed
  // collective's slot is never reused.
  std::vector<uint64_t> free_slots;
  uint64_t next_slot = 0;
  std::map<uint64_t, size_t> slot_sides_left;  // by slot in use: the sides still to end without failure
  uint64_t next_subgroup = 0;                                     // a subgroup collective's serial number
  std::map<std::vector<int>, std::vector<uint64_t>> subgroups_open;  // by group: its serials in flight, oldest first
  // What the world will still do (a route that stays cut, a host that stays off): the scenario's
  // platform and world. Null: a world that never changes.
  const PlatformSpec* platform = nullptr;
  const WorldSpec* changes = nullptr;

  // The parameter server of asynchronous policies (Transport::push_pull): on the relay, or on rank 0's
  // host when the platform has none. Made by the first push.
  std::unique_ptr<ParameterServer> server;
  ServerWindow window;
  double window_end_s = 0;         // when the open window closes at the latest
  simgrid::s4u::MutexPtr window_mutex;
  simgrid::s4u::ConditionVariablePtr window_closed;

  std::vector<int> members() const;        // the ranks in the group, in rank order
};

// Whether the world keeps resource `target` (a host's or a link's state), off at now_s, off from then
// on: no point of its state profile at or after now_s (none at all, if it repeats) turns it on, and
// no churn brings it back (`rank`: the host's rank, -1 for a link).
bool stays_off(const WorldSpec& world, const std::string& target, WorldResource what, int rank, double now_s);

// `rank` leaves the group (its host failed): every collective in flight it is a member of fails.
void leave_group(SimWorld& world, int rank);
// Fails collective `seq` (a member lost, a flow cut): stops its flows everywhere. Idempotent.
void fail_collective(SimWorld& world, const CollectiveId& id);
// Whether a member has started a collective (the whole group's or a subgroup's) with sequence number `seq`.
bool collective_started(const SimWorld& world, uint64_t seq);

// One collective's flows: this rank's side, and the relay's side for relayed algorithms (else empty).
struct CollectiveFlows {
  std::function<void(const std::string& tag)> rank_side;
  std::function<void(const std::string& tag)> relay_side;
};

class SimTransport : public Transport {
 public:
  SimTransport(SimWorld& world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(world_.hosts.size()); }
  double now_s() const override;
  void at_now(std::function<void(double now_s)> fn) override;
  void compute(double flops, const std::function<void()>& work) override;
  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override;
  Pending all_reduce_mean_among(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather_among(const std::vector<int>& group, const std::vector<torch::Tensor>& mine, double bytes,
                           std::vector<std::vector<torch::Tensor>>& out) override;
  bool push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                 const ServerExchange& exchange) override;

  // What the worker is blocked on right now ("computing", "waiting for collective 3 (all_reduce, 1.2 MB
  // per rank) since 12.5 s"), or "" between calls: named when a run ends with this worker unfinished.
  // Formatted only when asked (at the end of a stuck run), not at every step.
  std::string activity() const;

  // The sequence number of this worker's next collective: the same on every member of the group.
  uint64_t next_collective() const { return next_seq_; }
  // A worker that comes back continues the group's sequence of collectives from `next`.
  void rejoin(uint64_t next);
  // Starts the sides this rank deferred (deferred_) in helper actors: before it does anything else, and
  // when its actor ends, so that no other member waits on flows never started.
  void start_deferred();

 private:
  // Runs the steps compute() queued (SimWorld::marks), records them, and calls at_now()'s callbacks
  // with their times. Every call but compute() and at_now() does it first.
  void flush_computes();
  std::vector<double> queued_flops_;
  std::vector<std::pair<size_t, std::function<void(double)>>> queued_then_;  // after that many queued steps
  std::vector<double> step_ends_;  // the queued steps' ends, once run
  // Starts the deferred sides in kept actors, from now.
  void run_deferred();

  // The flows of the chosen algorithm for a payload of `bytes` per rank among `members`: the one
  // place that reads world_.collectives.
  using Members = std::shared_ptr<const std::vector<int>>;
  CollectiveFlows all_reduce_flows(const Members& members, double bytes) const;
  CollectiveFlows all_gather_flows(const Members& members, double bytes) const;
  // Deposits this rank's contribution to the next collective, among `group` (empty: the whole group;
  // the first member to arrive fixes its members and starts the relay's side) and starts this rank's
  // side of its flows in a helper actor on this rank's host; returns the collective's id.
  CollectiveId start(const std::vector<int>& group, std::vector<torch::Tensor> mine, const char* what, double bytes,
                     const std::function<CollectiveFlows(const Members&)>& flows);
  // Joins this rank's helper actor (recording the wait); on success lets `read` take the result,
  // on failure lets `salvage` take what it can after the failure timeout. Returns whether it completed.
  bool finish(const CollectiveId& id, const std::function<void(SimCollective&)>& read,
              const std::function<void(SimCollective&)>& salvage);
  Pending reduce(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w);
  Pending gather(const std::vector<int>& group, const std::vector<torch::Tensor>& mine, double bytes,
                 std::vector<std::vector<torch::Tensor>>& out);

  // Applies the open window's pushes and wakes the workers waiting on it.
  void close_window();
  // push_pull's wait at the server, for a push that reached it at `at`: in the transport's windows
  // (ServerWindow), or in the server's own (ParameterServer::arrive). Both return the reply.
  std::vector<torch::Tensor> exchange_window(std::vector<torch::Tensor> copy, double at, const ServerExchange& exchange);
  std::vector<torch::Tensor> exchange_own_window(std::vector<torch::Tensor> copy, double at, bool reply_at_once);
  // A failed exchange with the server: false (the worker tries again after its next round), or
  // throws CutOff when it can never succeed.
  bool exchange_failed();
  // Why the world keeps this worker from the server for good ("" if it does not): a link of the
  // route either way, or the server's host, off now and never on again.
  std::string cut_for_good() const;

  SimWorld& world_;
  int rank_;
  uint64_t next_seq_ = 0;
  uint64_t pushes_ = 0;
  // What activity() names: at most one of them is set.
  double computing_since_s_ = -1;       // in compute() since then
  double waiting_since_s_ = -1;         // in finish() since then, for collective waiting_for_
  CollectiveId waiting_for_;
  const char* doing_ = nullptr;         // blocked on the server
  struct Started {
    const char* what;  // "all_reduce", "all_gather"
    double bytes;      // per rank
  };
  std::map<CollectiveId, Started> started_;  // what each collective in flight is
  // This rank's side of each collective in flight: its own actor (joined), or a run in a kept actor.
  struct Helper {
    simgrid::s4u::ActorPtr actor;
    std::shared_ptr<SideRun> run;  // null: its own actor
  };
  std::map<CollectiveId, Helper> helpers_;
  // On a world that never fails (SimWorld::sides), this rank's sides not started yet, oldest first. A
  // rank that waits on a collective before doing anything else (DiLoCo's sync) runs its side's flows
  // itself, in the wait: no helper to resume and to wake it. Anything else it does first (a step, another
  // collective, a push) starts them in helpers, at the same simulated time.
  std::vector<std::pair<CollectiveId, std::function<void()>>> deferred_;
  // The key of this rank's next call among `group` (empty: the whole group's next sequence number).
  CollectiveId next_id(const std::vector<int>& group);
};

}  // namespace locosim
