// CO2, Sun et al. 2024 (arXiv 2401.16265); the outer rule and its defaults as in the released code
// (weigao266/fairscale-CO2 co2.py: outer_frequency 48, outer_lr 1, outer_momentum 0.5, co2_gap_penalty 1,
// clip threshold 1).
//
// With s inner steps done and t = s/τ the period that just ended:
//   every step:        θ_i ← InnerOpt(θ_i, ∇L_i)
//   s ≡ 0 (mod τ):     Δ_i^t ← θ − θ_i                 this period's outer gradient (θ: the anchor it started from)
//                      start the all-reduce of Δ_i^t
//                      Δ̄ ← mean_i Δ_i^(t−delay)         delay 0: wait for this one; 1: for the previous one
//                      m ← β·m + Δ̄/λ;  m ← clamp(m, −φ, φ);  θ ← θ − α·m
//                      θ_i ← θ                          the next period starts from the anchor
// delay 0 (the default) is what the released code runs: its outer step averages the parameters with a
// blocking reduce and broadcast. Its communication thread, meant for the overlap, only ever re-averages
// parameters that step has just made equal (with the sharded outer step, the only one its launcher
// builds), and at the class defaults it never all-reduces. delay 1 is the paper's schedule: the
// all-reduce runs while the next τ steps compute, and every period's Δ is applied once, one period late,
// to the anchor of that moment. When a period's Δ̄ is the whole way to the optimum (a quadratic), delay 0
// is stable for α/λ < 2(1 + β) and delay 1 only for α/λ < 1 − β: λ 1 with the stale step oscillates and
// diverges. The paper's Λ_t, meant to tame the staleness, is not in the code and not here.
// The code averages the parameters; here the outer gradient travels instead (θ is identical everywhere,
// so mean(θ − θ_i) = θ − mean θ_i in exact arithmetic): a lossy wire then rounds the update, not the
// weights, and delay 0 with λ 1 and no clipping is exactly DiLoCo with heavy-ball momentum. The code's
// clamp is a no-op (its result is dropped, and clipping is off by default); here φ clamps.
// Wire per worker per period: 2(K-1)/K · P · b bytes each way; hidden behind τ steps of compute at delay 1.
#include "algorithms/co2.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

void co2_outer_step(const Co2Config& cfg, std::vector<torch::Tensor>& anchor, std::vector<torch::Tensor>& momentum,
                    const std::vector<torch::Tensor>& delta_mean) {
  for (size_t i = 0; i < anchor.size(); ++i) {
    torch::Tensor m = momentum[i].detach();
    m.mul_(cfg.outer_momentum);
    if (cfg.penalty == Co2Penalty::gap) {
      m.add_(delta_mean[i].detach() / cfg.gap_penalty);
    } else {
      m.add_(delta_mean[i].detach());
    }
    if (cfg.momentum_clip > 0) m.clamp_(-cfg.momentum_clip, cfg.momentum_clip);
    anchor[i].detach().add_(m, -cfg.outer_lr);
  }
}

namespace {

class Co2 : public Policy {
 public:
  Co2(const Co2Config& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)), anchor_(ctx_.params) {
    for (const auto& p : ctx_.params) momentum_.push_back(torch::zeros_like(p.detach()));
  }

  // The sync reported is that of the round applied at this step (the previous period's, at delay 1).
  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
    auto round = std::make_unique<Round>();
    round->delta = anchor_.pseudo_gradient(ctx_.params);  // Δ_i = θ − θ_i
    round->pending = ctx_.transport->all_reduce_mean(round->delta, Wire{cfg_.wire, ctx_.wire_scale});
    Sync sync = Sync::none;
    if (cfg_.delay == 0) {
      sync = apply(*round);
    } else {
      if (previous_) sync = apply(*previous_);
      previous_ = std::move(round);  // waited on at the end of the next period
    }
    anchor_.restart(ctx_.params);
    return sync;
  }

  // At delay 0, after a period every member holds the same anchor and momentum and nothing is in
  // flight: a joiner takes them and the donor's inner optimizer state, as DiLoCo's. At delay 1 the
  // next period's all-reduce is always in flight: a lost worker stays out.
  bool handover_ready() const override { return cfg_.delay == 0; }
  void save(torch::serialize::OutputArchive& archive) const override {
    anchor_.save(archive, "anchor", "");
    save_tensors(archive, "momentum", momentum_);
    save_optimizer(archive, "inner", *inner_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    anchor_.load(archive, "anchor", "");
    load_tensors(archive, "momentum", momentum_);
    load_optimizer(archive, "inner", *inner_);
    anchor_.restart(ctx_.params);
  }

  // At delay 1 the last period's all-reduce is still in flight: apply it, and move the local parameters
  // by the same step so that steps after the last period's end (if any) are kept.
  void finish() override {
    if (!previous_) return;
    const std::vector<torch::Tensor>& theta = anchor_.theta();
    std::vector<torch::Tensor> before;
    for (const auto& a : theta) before.push_back(a.clone());
    (void)apply(*previous_);
    previous_.reset();
    for (size_t i = 0; i < theta.size(); ++i) ctx_.params[i].detach().add_(theta[i] - before[i]);
  }

 private:
  struct Round {
    std::vector<torch::Tensor> delta;  // Δ_i, averaged in place by the wait; the Pending refers to it
    Pending pending;
  };

  // Overlapped, so never redone: a failed round is skipped (θ and m untouched; its period's local
  // progress, carried only by that round, is lost).
  Sync apply(Round& round) {
    if (!round.pending.wait()) return Sync::aborted;
    co2_outer_step(cfg_, anchor_.theta(), momentum_, round.delta);
    return Sync::committed;
  }

  Co2Config cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  Anchor anchor_;                        // θ: outer parameters, identical on every worker (CO2's own outer rule)
  std::vector<torch::Tensor> momentum_;  // m
  std::unique_ptr<Round> previous_;      // delay 1: the all-reduce started at the end of the previous period
};

}  // namespace

std::unique_ptr<Policy> make_co2(const Co2Config& cfg, PolicyContext ctx) {
  return std::make_unique<Co2>(cfg, std::move(ctx));
}

}  // namespace locosim
