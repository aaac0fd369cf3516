// The real cluster's Transport: the same calls on c10d process groups (Gloo, on host memory: a GPU's
// tensors are staged there); compute just runs the work; time is the wall clock. When a member is
// lost, the survivors re-form the group among themselves and go on (a failed collective's wait()
// returns false, as the seam says).
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"
#include "real/heartbeat.hpp"

namespace locosim {

class RelayClient;  // real/relay.hpp

// How all_reduce_mean travels on a real cluster.
//   exact:  all-gather of the wire-rounded contributions, then mean_in_rank_order on every rank —
//           the simulator's numerics bit for bit ((K-1)·S per rank on the wire: parity runs).
//   native: the backend's own all-reduce (sum, then /members) in the wire's dtype — ring traffic,
//           2(K-1)/K·S per rank, but the summation order is the backend's (timing runs).
enum class ReduceMode { exact, native };

// The job the transport's groups are formed in.
struct C10dJob {
  c10::intrusive_ptr<c10d::Store> store;            // the job's store, hosted by rank 0
  int rank = 0;                                      // this rank, in the original group
  int world_size = 1;                                // K: the original group's size
  std::shared_ptr<::gloo::transport::Device> device;
  std::chrono::milliseconds timeout{60000};          // a collective or a group's rendezvous
  std::shared_ptr<Heartbeat> heartbeat;
  std::chrono::milliseconds watch{5000};             // a member silent this long is lost
  bool joining = false;                              // a restarted rank: no epoch 0; await_admission()
  // Opens another connection to the job's store (rank 0's parameter server talks on its own).
  std::function<c10::intrusive_ptr<c10d::Store>()> connect;
  // When set, all_gather goes through this relay (real/relay.hpp) instead of a Gloo all-gather:
  // static groups only (a lost rank fails the run).
  std::shared_ptr<RelayClient> relay;
};

// Rejoining. Rank 0 sets "job/started" once epoch 0 is formed and keeps "group/current" = [epoch,
// members...]. A rank restarted while the job runs (job_in_progress) waits until it is out of the
// group (rank 0 saw it lost), starts its heartbeat, posts "join/request/<r>" and waits. Every member
// calls handover_point() at each of its handover points (TrainLoop::on_handover_point). There rank 0,
// seeing requests, publishes group/<epoch>/admit = [D, joiners...] with D = the collectives started
// in the epoch so far; every member re-forms at its first handover point with more than D
// collectives started in the epoch — the same point on every member: a member past collective D
// passed its commit, which needs rank 0's report, which rank 0 made after publishing. There rank 0
// writes its policy's state to "join/<r>/state" and "join/<r>/admit" = [epoch+1, steps done, its
// clock, when it noticed the loss, members...], and every member (the joiner too) opens epoch + 1
// with the joiners in, at their original ranks.
bool job_in_progress(c10d::Store& store);
// Waits until `rank` is not in the group (rank 0 noticed its loss); false if the job ended first.
bool wait_until_out(c10d::Store& store, int rank);
// Whether rank 0 has written the run folder (the job is over).
bool job_over(c10d::Store& store);

// Membership. The group is formed in epochs: epoch 0 is every rank; when a collective fails (Gloo
// reports a lost peer or a timeout, or a member's heartbeat stops), the members that are left
// re-form it as epoch n+1: a new ProcessGroupGloo over PrefixStore("epoch-<n+1>", store) among the
// survivors (new rank = index among them). Rank 0 decides who survives and which collectives
// committed (below) and publishes it in the store; the others read it. Rank 0 hosts the store: if
// it is lost, the run fails as it would without re-forming.
//
// Commit agreement. A Gloo collective can complete on some members and fail on others (a member
// lost half-way through a ring): a member only commits a collective once every member of the epoch
// has reported completing it (a key in the store per member, a round trip per collective). A
// member that sees a failure instead, or a silent member, flags the epoch and enters the re-form;
// there rank 0 waits until every member has entered it or fallen silent, then decides: a collective
// committed iff every member of the epoch (the lost included) reported completing it. Every member
// thus commits the same collectives; collectives started in the old epoch that were not decided
// fail on every member (wait() false), so the survivors' next collective calls line up in the new
// epoch.
class C10dTransport : public Transport {
 public:
  C10dTransport(C10dJob job, ReduceMode mode, Recorder& recorder);
  ~C10dTransport() override;

  int rank() const override { return job_.rank; }               // the original rank, always
  int world_size() const override { return job_.world_size; }   // the original K, always
  double now_s() const override;
  void compute(double flops, const std::function<void()>& work) override;
  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override;
  // Subgroups travel as an all-gather of the whole group (the exact mode's), each member keeping its
  // group's contributions: the numerics of the simulator's subgroups bit for bit, the membership and
  // failure rules of the whole group's collectives, (K−1)·S bytes per rank on the wire (recorded as
  // such). REQUIRES: every rank makes every subgroup call at the same point of its sequence (a rank in
  // no group names itself alone), with a payload of the same size: NoLoCo's draw does. A failure fails
  // every rank's call, so redos stay in step.
  Pending all_reduce_mean_among(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather_among(const std::vector<int>& group, const std::vector<torch::Tensor>& mine, double bytes,
                           std::vector<std::vector<torch::Tensor>>& out) override;
  // Through the store (real/c10d_server.cpp): rank 0 hosts the server on a thread of its own.
  bool push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                 const ServerExchange& exchange) override;
  // Rank 0: waits until its server has told every rank to stop; its updates (empty without one).
  std::vector<ServerUpdate> stop_server();

  // The original ranks in the group now, in rank order.
  const std::vector<int>& members() const { return members_; }
  // The ranks lost so far, with when this rank noticed (now_s()).
  struct Loss {
    int rank = 0;
    double noticed_s = 0;
  };
  const std::vector<Loss>& lost() const { return lost_; }
  int epoch() const { return epoch_; }

  // Rejoining (see above). At a handover point of every member, after `steps_done` steps: may
  // decide (rank 0) or carry out (everyone) an admission; `save` gives the policy's archive (rank 0).
  void handover_point(int64_t steps_done, const std::function<std::string()>& save);
  // Ranks admitted back (rank 0 only knows), with when (now_s()).
  struct Joined {
    int rank = 0;
    double admitted_s = 0;
  };
  const std::vector<Joined>& joined() const { return joined_; }
  // A joining rank: its heartbeat, once it is out of the group.
  void watch_with(std::shared_ptr<Heartbeat> heartbeat) { job_.heartbeat = std::move(heartbeat); }
  struct Admission {
    int epoch = 0;
    std::vector<int> members;
    int64_t steps_done = 0;
    double lost_at_s = 0;           // when rank 0 noticed the loss (this clock, now rank 0's)
    std::string state;              // the policy's archive
    double download_start_s = 0, download_end_s = 0;
  };
  // A joining rank: posts its request and waits for admission; its clock is set to rank 0's. Empty
  // if the job ended first.
  std::optional<Admission> await_admission();
  // A joining rank: goes into the group of its admission.
  void enter(const Admission& admission) { open_epoch(admission.epoch, admission.members); }

 private:
  struct Flight;
  std::shared_ptr<Flight> start(std::vector<c10::intrusive_ptr<c10d::Work>> works);
  std::shared_ptr<Flight> skipped();
  // Waits for the flight and agrees on it with the other members (re-forming the group if it
  // failed); records the blocked time and the traffic. Returns whether it committed.
  bool settle(Flight& f, double sent_bytes, double recv_bytes);
  bool wait_works(const Flight& f);
  enum class Barrier { committed, failed };
  Barrier barrier(const Flight& f);
  bool reform(int64_t seq);
  void open_epoch(int epoch, std::vector<int> members);
  bool epoch_flagged(int epoch);
  bool member_silent() const;
  Pending gather(const std::vector<torch::Tensor>& mine, double bytes, std::vector<std::vector<torch::Tensor>>& out,
                 int salvages_left);
  Pending relay_gather(const std::vector<torch::Tensor>& copy, double bytes,
                       std::vector<std::vector<torch::Tensor>>& out);

  C10dJob job_;
  ReduceMode mode_;
  Recorder& recorder_;
  std::chrono::steady_clock::time_point start_;
  int epoch_ = 0;
  std::vector<int> members_;                        // original ranks, in order (index = rank in group_)
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> retired_;  // earlier epochs' groups
  int64_t next_seq_ = 0;                            // collectives started in this epoch
  int64_t fail_next_ = 0;                           // calls that still belong to the previous epoch
  std::vector<Loss> lost_;
  std::vector<Joined> joined_;
  // The parameter server (rank 0) and this rank's pushes so far.
  struct ServerThread;
  std::shared_ptr<ServerThread> server_;
  void release_server();  // a run that failed: the server thread, if any, is left to the exit
  int64_t pushes_ = 0;
};

}  // namespace locosim
