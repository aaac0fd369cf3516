// DiLoCo, Douillard et al. 2023 (arXiv 2311.08105), Algorithm 1; defaults as in OpenDiLoCo
// (arXiv 2407.07852). Each worker keeps its own inner optimizer state across rounds.
//
//   every step:          θ_i ← InnerOpt(θ_i, ∇L_i)
//   every H steps:       Δ   ← (1/k) Σ_i (θ − θ_i)          pseudo-gradient, one all-reduce
//                        m   ← μ·m + Δ
//                        θ   ← θ − η·(Δ + μ·m)             Nesterov (torch SGD, nesterov=true)
//                        θ_i ← θ
// Wire per worker per round: a ring all-reduce of P values, 2(K-1)/K · P · b bytes each way.
#include "algorithms/diloco.hpp"

#include <torch/utils.h>

#include "config/section.hpp"

namespace locosim {

DiLoCoConfig DiLoCoConfig::parse(Section& s) {
  DiLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  c.nesterov = s.flag("nesterov", c.nesterov);
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

namespace {

class DiLoCo : public Policy {
 public:
  DiLoCo(const DiLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)) {
    for (const auto& p : ctx_.params) global_.push_back(p.detach().clone().requires_grad_(true));
    // torch's SGD is exactly the outer rule above; Nesterov needs μ > 0.
    bool nesterov = cfg_.nesterov && cfg_.outer_momentum > 0;
    outer_ = std::make_unique<torch::optim::SGD>(
        global_, torch::optim::SGDOptions(cfg_.outer_lr).momentum(cfg_.outer_momentum).nesterov(nesterov));
  }

  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
    return synchronize();
  }

  // After a round θ_i = θ on every member: a joiner takes θ, the outer momentum, and the donor's
  // inner optimizer state (as torchft heals a replica from a peer's whole state).
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "global", global_);
    save_optimizer(archive, "outer", *outer_);
    save_optimizer(archive, "inner", *inner_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "global", global_);
    load_optimizer(archive, "outer", *outer_);
    load_optimizer(archive, "inner", *inner_);
    for (size_t i = 0; i < global_.size(); ++i) ctx_.params[i].detach().copy_(global_[i].detach());
  }

 private:
  // Commit or redo: the outer step is taken only on a completed all-reduce (redone among the
  // survivors if a member is lost). A round given up leaves θ and the momentum untouched and restarts
  // every member from θ: its inner steps are thrown away, never half-applied.
  Sync synchronize() {
    std::vector<torch::Tensor> delta;  // Δ_i = θ − θ_i, then averaged in place
    for (size_t i = 0; i < global_.size(); ++i) delta.push_back(global_[i].detach() - ctx_.params[i].detach());
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    const bool committed = commit_or_redo([&] { return ctx_.transport->all_reduce_mean(delta, wire); });
    if (committed) {
      for (size_t i = 0; i < global_.size(); ++i) global_[i].mutable_grad() = delta[i];
      outer_->step();
    }
    for (size_t i = 0; i < global_.size(); ++i) ctx_.params[i].detach().copy_(global_[i].detach());
    return committed ? Sync::committed : Sync::aborted;
  }

  DiLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  std::vector<torch::Tensor> global_;  // θ: the outer parameters, identical on every worker
  std::unique_ptr<torch::optim::SGD> outer_;
};

}  // namespace

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<DiLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
