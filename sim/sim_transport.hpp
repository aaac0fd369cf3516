// The simulator's Transport: real numerics, SimGrid time. Each collective runs its flows in a
// helper actor on the worker's host, so it proceeds while the worker computes; wait() joins it.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"
#include "config/platform.hpp"
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
  CollectiveChoice collectives;            // how collectives travel (the scenario's `network:`)
  simgrid::s4u::Host* relay = nullptr;     // REQUIRED by the relay algorithms
  std::vector<std::vector<int>> sites;     // ranks by site (site_groups): REQUIRED by hierarchical
  std::map<uint64_t, SimCollective> in_flight;  // by sequence number, the same on every rank
};

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
  void compute(double flops, const std::function<void()>& work) override;
  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override;

  // What the worker is blocked on right now ("computing", "waiting for collective 3 (all_reduce, 1.2 MB
  // per rank) since 12.5 s"), or "" between calls: named when a run ends with this worker unfinished.
  const std::string& activity() const { return activity_; }

 private:
  // The flows of the chosen algorithm for a payload of `bytes` per rank: the one place that reads
  // world_.collectives.
  CollectiveFlows all_reduce_flows(double bytes) const;
  CollectiveFlows all_gather_flows(double bytes) const;
  // Deposits this rank's contribution to the next collective and starts its side of `flows` in a
  // helper actor on this rank's host (the first rank to arrive also starts the relay's side on the
  // relay host); returns the sequence number and the helper actor.
  std::pair<uint64_t, simgrid::s4u::ActorPtr> start(std::vector<torch::Tensor> mine, CollectiveFlows flows);
  // Joins the helper actor (recording the wait), lets `read` take the result, frees the slot.
  void finish(uint64_t seq, const simgrid::s4u::ActorPtr& flows, const std::function<void(SimCollective&)>& read);

  SimWorld& world_;
  int rank_;
  uint64_t next_seq_ = 0;
  std::string activity_;
  std::map<uint64_t, std::string> started_;  // by sequence number: what each collective in flight is
};

}  // namespace locosim
