// FedAvg (McMahan et al. 2017, arXiv 1602.05629, Alg. 1 with every client taking part) as Local SGD
// (Stich 2019, arXiv 1805.09767; Lin et al. 2020, arXiv 1808.07217): each worker runs H steps of
// its inner optimizer, then the parameters are replaced by their mean over the K workers.
//
//   every step:     θ_i ← InnerOpt(θ_i, ∇L_i)
//   every H steps:  θ_i ← (1/K) Σ_j θ_j            one all-reduce of the parameters
//
// This is DiLoCo with outer SGD, lr 1, momentum 0 (DiLoCo §3): θ − 1·(θ − mean θ_j) = mean θ_j.
// Wire per worker per round: a ring all-reduce of P values, 2(K-1)/K · P · b bytes each way.
// Unlike DiLoCo the parameters travel, not their change: a lossy wire rounds the weights themselves.
#include "algorithms/fedavg.hpp"

#include "algorithms/policy.hpp"

namespace locosim {

namespace {

class FedAvg : public Policy {
 public:
  FedAvg(const FedAvgConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)) {}

  // Commit or redo; a round given up keeps each member's own θ_i (there is no outer state to protect:
  // the next round averages again).
  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
    std::vector<torch::Tensor> theta;  // views of θ_i: the mean is written back into the model
    for (const auto& p : ctx_.params) theta.push_back(p.detach());
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    return commit_or_redo([&] { return ctx_.transport->all_reduce_mean(theta, wire); }) ? Sync::committed
                                                                                          : Sync::aborted;
  }

  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "params", ctx_.params);
    save_optimizer(archive, "inner", *inner_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "params", ctx_.params);
    load_optimizer(archive, "inner", *inner_);
  }

 private:
  FedAvgConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;  // kept across rounds, as DiLoCo's inner state
};

}  // namespace

std::unique_ptr<Policy> make_fedavg(const FedAvgConfig& cfg, PolicyContext ctx) {
  return std::make_unique<FedAvg>(cfg, std::move(ctx));
}

}  // namespace locosim
