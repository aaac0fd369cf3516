// The seam between the algorithms and the world: collectives on tensors, started now and waited on
// later, the worker's identity, and its clock. The simulator (sim/) and the real cluster (real/)
// each implement it; algorithms/local_transport.hpp is an in-process one for tests.
#pragma once
#include <torch/types.h>

#include <functional>
#include <memory>
#include <vector>

#include "algorithms/codec.hpp"

namespace locosim {

// How tensors travel: the bytes charged are the codec's bytes × scale. scale > 1 prices the small
// model that really trains as a larger one (timing.params / model params).
struct Wire {
  WireFormat format = WireFormat::fp32;
  double scale = 1.0;
};

// A collective in flight. wait() blocks until it completes and its results are in place; calling it
// again does nothing. Results land only through wait(): every Pending must be waited on.
class Pending {
 public:
  Pending() = default;  // already complete
  explicit Pending(std::function<void()> wait_fn) : wait_fn_(std::move(wait_fn)) {}
  Pending(Pending&&) noexcept = default;
  Pending& operator=(Pending&&) noexcept = default;

  void wait() {
    if (wait_fn_) {
      auto fn = std::move(wait_fn_);
      wait_fn_ = nullptr;
      fn();
    }
  }
  bool done() const { return !wait_fn_; }

 private:
  std::function<void()> wait_fn_;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Averages `xs` across all workers, in place, when the returned Pending is waited on.
  // The contributions are taken (rounded to w.format) when the call is made, so the caller may keep
  // changing xs until wait(). The mean is summed in fp32 in rank order (bit-identical everywhere)
  // and rounded to w.format again, as the all-gather half of the collective carries it.
  // REQUIRES: every worker makes the same sequence of collective calls with tensors of the same shapes.
  virtual Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) = 0;

  // Gathers every worker's `mine` into out[rank] (out is resized to world_size(); out[rank()] is a
  // copy of mine) when the returned Pending is waited on. The tensors are sent as they are: the caller
  // has already encoded them (indices, quantized values) and says what they weigh on the wire in
  // `bytes` (including any Wire::scale pricing). Contributions are taken when the call is made.
  // REQUIRES: as for all_reduce_mean; `out` outlives the wait.
  virtual Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                             std::vector<std::vector<torch::Tensor>>& out) = 0;

  // Runs `work` (the real computation) and charges `flops` of this worker's compute time.
  virtual void compute(double flops, const std::function<void()>& work) = 0;

  // Seconds since the start of training: simulated on the simulator, wall-clock on a real cluster.
  virtual double now_s() const = 0;
};

// The reference reduction every transport uses: mean over contributions[rank][i] in rank order,
// rounded to the wire format. contributions are already rounded to it (through_wire).
std::vector<torch::Tensor> mean_in_rank_order(const std::vector<std::vector<torch::Tensor>>& contributions,
                                              WireFormat format);

// What all_gather hands every caller: each rank's contribution, cloned (so callers own their copies).
std::vector<std::vector<torch::Tensor>> gathered_copy(const std::vector<std::vector<torch::Tensor>>& contributions);

// Sum of the sizes in bytes of xs on the wire (before Wire::scale).
double wire_bytes(const std::vector<torch::Tensor>& xs, WireFormat format);

}  // namespace locosim
