// The real cluster's Transport: the same calls on a c10d ProcessGroup (Gloo on CPU, NCCL when the
// tensors live on a CUDA device); compute just runs the work; time is the wall clock.
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>

#include "algorithms/recorder.hpp"
#include "algorithms/transport.hpp"

namespace locosim {

// How all_reduce_mean travels on a real cluster.
//   exact:  all-gather of the wire-rounded contributions, then mean_in_rank_order on every rank —
//           the simulator's numerics bit for bit ((K-1)·S per rank on the wire: parity runs).
//   native: the backend's own all-reduce (sum, then /K) in the wire's dtype — ring traffic,
//           2(K-1)/K·S per rank, but the summation order is the backend's (timing runs).
enum class ReduceMode { exact, native };

class C10dTransport : public Transport {
 public:
  C10dTransport(c10::intrusive_ptr<c10d::ProcessGroup> group, ReduceMode mode, Recorder& recorder);

  int rank() const override { return group_->getRank(); }
  int world_size() const override { return group_->getSize(); }
  double now_s() const override;
  void compute(double flops, const std::function<void()>& work) override;
  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override;
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override;

 private:
  // Waits for `work`, recording the blocked time and the traffic as events.
  void wait_for(const c10::intrusive_ptr<c10d::Work>& work, double sent_bytes, double recv_bytes);

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  ReduceMode mode_;
  Recorder& recorder_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace locosim
