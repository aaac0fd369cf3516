// The simulator's Transport: real numerics, SimGrid time. Each collective runs its flows in a
// helper actor on the worker's host, so it proceeds while the worker computes; wait() joins it.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"
#include <simgrid/forward.h>

namespace locosim {

// A collective in flight: each rank's contribution, the mean once computed.
struct SimCollective {
  std::vector<std::vector<torch::Tensor>> contributions;
  std::vector<torch::Tensor> result;
  int readers_left = 0;
};

// What the workers of one simulated run share (all actors run on one thread: no locks).
struct SimWorld {
  std::vector<simgrid::s4u::Host*> hosts;  // by rank
  Recorder* recorder = nullptr;
  std::map<uint64_t, SimCollective> in_flight;  // by sequence number, the same on every rank
};

class SimTransport : public Transport {
 public:
  SimTransport(SimWorld& world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(world_.hosts.size()); }
  double now_s() const override;
  void compute(double flops, const std::function<void()>& work) override;
  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override;

 private:
  // Deposits this rank's contribution to the next collective and starts `flows` (this rank's
  // point-to-point transfers) in a helper actor; returns the sequence number and the actor.
  std::pair<uint64_t, simgrid::s4u::ActorPtr> start(std::vector<torch::Tensor> mine,
                                                    std::function<void(const std::string& tag)> flows);
  // Joins the helper actor (recording the wait), lets `read` take the result, frees the slot.
  void finish(uint64_t seq, const simgrid::s4u::ActorPtr& flows, const std::function<void(SimCollective&)>& read);

  SimWorld& world_;
  int rank_;
  uint64_t next_seq_ = 0;
};

}  // namespace locosim
