// Eager (one-step-delayed) DiLoCo, Kale, Douillard, Donchev 2025 (arXiv 2502.12996).
//
// Worker m, with M workers and t the round that just ended:
//   every step:           θ_m,i ← InnerOpt(θ_m,i, ∇L)
//   every H steps:        Δ_m(t) ← θ_m − θ_m,i                  start its all-reduce; do not wait
//                         Δ̄(t−1) ← the all-reduce started a round ago (it travelled during round t)
//     eager:              g ← Δ̄(t−1) + (Δ_m(t) − Δ_m(t−1)) / M   its own fresh share replaces its stale one
//     delayed:            g ← Δ̄(t−1)                             the naive one-step delay
//                         θ_m ← Outer(θ_m, g);  θ_m,i ← θ_m
// In round 0 nothing has arrived: eager steps on Δ_m(0)/M (Δ̄(−1) = Δ_m(−1) = 0), delayed takes no
// outer step. The last round's all-reduce ends after the last step: it is waited on, not applied. On
// one worker eager is DiLoCo (Δ̄(t−1) = Δ(t−1)), and delayed is DiLoCo one round late.
// With eager, each worker's outer parameters θ_m differ from the others' by what its own fresh share
// did; the paper's text read for this does not say whether they are re-synchronised, and here they
// are not. M is the world size (on a changing world the average is over the members present).
// Wire per worker per round: 2(K−1)/K · P · b, hidden behind the next H steps of compute.
#include "algorithms/eager_diloco.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

namespace {

class EagerDiLoCo : public Policy {
 public:
  EagerDiLoCo(const EagerDiLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg),
        ctx_(std::move(ctx)),
        inner_(make_optimizer(ctx_.params, ctx_.optimizer)),
        anchor_(ctx_.params, cfg_.outer) {}

  // The sync reported is that of the all-reduce waited on at this step (the previous round's).
  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
    auto round = std::make_unique<Round>();
    round->mine = anchor_.pseudo_gradient(ctx_.params);  // Δ_m(t)
    for (const auto& d : round->mine) round->mean.push_back(anchor_.values() ? d.clone() : d);
    round->pending = ctx_.transport->all_reduce_mean(round->mean, Wire{cfg_.wire, ctx_.wire_scale});
    Sync sync = Sync::none;
    std::vector<torch::Tensor> g;
    if (previous_) {
      const bool arrived = previous_->pending.wait();
      sync = arrived ? Sync::committed : Sync::aborted;
      // A failed average is skipped (never redone: the next round's is already in flight): eager then
      // steps on its fresh share alone, delayed takes no outer step.
      if (arrived) g = cfg_.variant == EagerVariant::eager ? eager_mix(previous_->mean, round->mine, previous_->mine)
                                                            : previous_->mean;
      else if (cfg_.variant == EagerVariant::eager) g = own_share(round->mine);
    } else if (cfg_.variant == EagerVariant::eager) {
      g = own_share(round->mine);
    }
    if (!g.empty()) anchor_.outer_step(g);
    anchor_.restart(ctx_.params);
    previous_ = std::move(round);
    return sync;
  }

  // The last round's all-reduce is still in flight: it is waited on (its traffic ends) and not applied:
  // the paper's loop ends with the last outer step.
  void finish() override {
    if (previous_) (void)previous_->pending.wait();
    previous_.reset();
  }

 private:
  struct Round {
    std::vector<torch::Tensor> mine;  // Δ_m(t)
    std::vector<torch::Tensor> mean;  // Δ̄(t) once waited on (the Pending refers to it)
    Pending pending;
  };

  // Δ_m / M.
  std::vector<torch::Tensor> own_share(const std::vector<torch::Tensor>& mine) const {
    if (!anchor_.values()) return mine;
    std::vector<torch::Tensor> out;
    for (const auto& d : mine) out.push_back(d / static_cast<double>(ctx_.transport->world_size()));
    return out;
  }

  // Δ̄(t−1) + (Δ_m(t) − Δ_m(t−1)) / M.
  std::vector<torch::Tensor> eager_mix(const std::vector<torch::Tensor>& stale_mean, const std::vector<torch::Tensor>& fresh,
                                       const std::vector<torch::Tensor>& stale) const {
    if (!anchor_.values()) return stale_mean;
    std::vector<torch::Tensor> out;
    const double m = static_cast<double>(ctx_.transport->world_size());
    for (size_t i = 0; i < fresh.size(); ++i) out.push_back(stale_mean[i] + (fresh[i] - stale[i]) / m);
    return out;
  }

  EagerDiLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  Anchor anchor_;                    // θ_m and the outer optimizer
  std::unique_ptr<Round> previous_;  // the round whose all-reduce is in flight
};

}  // namespace

std::unique_ptr<Policy> make_eager_diloco(const EagerDiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<EagerDiLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
