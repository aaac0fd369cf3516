// The simulator's Transport: real numerics, SimGrid time. Each collective runs its flows in a
// helper actor on the worker's host, so it proceeds while the worker computes; wait() joins it.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"

namespace simgrid::s4u {
class Host;
}

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

 private:
  SimWorld& world_;
  int rank_;
  uint64_t next_seq_ = 0;
};

}  // namespace locosim
