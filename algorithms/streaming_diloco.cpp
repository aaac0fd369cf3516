// Streaming DiLoCo, Douillard et al. 2025 (arXiv 2501.18512), with the schedule of torchft's
// local_sgd.DiLoCo (sync_every = H, fragment_sync_delay = τ, fragment_update_alpha = α).
//
// The parameters are split into F fragments p. Fragment p is synchronised every H steps, at its own
// offset o_p = p·H/F, so a sync happens every H/F steps and moves about P/F values (peak bandwidth
// F× lower than DiLoCo's). With s inner steps done:
//   every step:             θ_i ← InnerOpt(θ_i, ∇L_i)
//   s ≡ o_p (mod H):        Δ_p,i ← θ_p − θ_p,i            outer gradient of fragment p, on the wire
//                           start the all-reduce of Δ_p,i; keep training
//   τ steps later:          Δ_p ← mean_i Δ_p,i               (wait)
//                           θ_p ← OuterNesterov(θ_p, Δ_p)    (η, μ; fragment p's own momentum)
//                           θ_p,i ← α·θ_p,i + (1−α)·θ_p      merge with the τ steps done meanwhile
// With F=1, τ=0, α=0 this is DiLoCo. Wire per worker per sync: 2(K-1)/K · (P/F) · b, b = 4.5/8 for int4 and e3m0.
#include "algorithms/streaming_diloco.hpp"

#include <cstdio>
#include <deque>
#include <stdexcept>
#include <string>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

int64_t transformer_blocks(const std::vector<torch::Tensor>& params) {
  const int64_t inner = static_cast<int64_t>(params.size()) - 2;  // without embedding and final norm
  for (int64_t period = 1; inner > 0 && period <= inner; ++period) {
    if (inner % period != 0) continue;
    bool repeats = true;
    for (int64_t i = period; i < inner && repeats; ++i) {
      repeats = params[1 + i].sizes() == params[1 + i % period].sizes();
    }
    if (repeats) return inner / period;
  }
  throw std::invalid_argument("streaming_diloco: the parameters are not [embedding, equal blocks, final norm]");
}

std::vector<std::vector<size_t>> strided_fragments(const std::vector<torch::Tensor>& params, int64_t fragments) {
  const int64_t blocks = transformer_blocks(params);
  const size_t per_block = (params.size() - 2) / static_cast<size_t>(blocks);
  std::vector<std::vector<size_t>> members(fragments);
  members[0].push_back(0);  // the (tied) embedding
  for (int64_t b = 0; b < blocks; ++b) {
    for (size_t j = 0; j < per_block; ++j) members[b % fragments].push_back(1 + b * per_block + j);
  }
  members[(blocks - 1) % fragments].push_back(params.size() - 1);  // the final norm
  return members;
}

namespace {

class StreamingDiLoCo : public Policy {
 public:
  StreamingDiLoCo(const StreamingDiLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)) {
    int64_t f = cfg_.fragments;
    const int64_t blocks = transformer_blocks(ctx_.params);
    if (f > blocks) {
      if (ctx_.transport->rank() == 0) {
        std::fprintf(stderr, "streaming_diloco: fragments %lld > the model's %lld blocks: using fragments %lld\n",
                     static_cast<long long>(f), static_cast<long long>(blocks), static_cast<long long>(blocks));
      }
      f = blocks;  // offsets stay ≥ H/F apart, so τ < H/F still holds
    }
    OuterConfig outer;  // torchft's: SGD with Nesterov momentum (heavy ball with nesterov: false)
    outer.rule = cfg_.nesterov ? OuterRule::nesterov : OuterRule::sgd;
    outer.lr = cfg_.outer_lr;
    outer.momentum = cfg_.outer_momentum;
    auto members = strided_fragments(ctx_.params, f);
    for (int64_t p = 0; p < f; ++p) {
      Fragment frag{members[p], p * cfg_.inner_steps / f, {}, nullptr};
      for (size_t i : frag.index) frag.params.push_back(ctx_.params[i]);
      frag.anchor = std::make_unique<Anchor>(frag.params, outer);
      fragments_.push_back(std::move(frag));
    }
  }

  // The sync reported is that of the fragments applied at this step (aborted if any of them failed).
  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    const int64_t s = step + 1;  // inner steps done
    for (size_t p = 0; p < fragments_.size(); ++p) {
      if (s % cfg_.inner_steps == fragments_[p].offset) start_sync(p, s);
    }
    Sync sync = Sync::none;
    while (!in_flight_.empty() && in_flight_.front()->apply_at <= s) {
      const Sync applied = apply_oldest();
      if (sync != Sync::aborted) sync = applied;
    }
    return sync;
  }

  void finish() override {
    while (!in_flight_.empty()) (void)apply_oldest();
  }

 private:
  struct Fragment {
    std::vector<size_t> index;              // into ctx_.params
    int64_t offset = 0;                     // o_p
    std::vector<torch::Tensor> params;      // θ_p,i: the worker's parameters in it
    std::unique_ptr<Anchor> anchor;         // θ_p: outer parameters, identical on every worker, and their outer step
  };
  struct FragmentSync {
    size_t fragment = 0;
    int64_t apply_at = 0;                   // s at which Δ_p is waited on and applied
    std::vector<torch::Tensor> delta;       // Δ_p,i, averaged in place by the wait; the Pending refers to it
    Pending pending;
  };

  void start_sync(size_t p, int64_t s) {
    auto sync = std::make_unique<FragmentSync>();
    sync->fragment = p;
    sync->apply_at = s + cfg_.sync_delay;
    const Fragment& frag = fragments_[p];
    sync->delta = frag.anchor->pseudo_gradient(frag.params);  // Δ_p,i = θ_p − θ_p,i
    sync->pending = ctx_.transport->all_reduce_mean(sync->delta, Wire{cfg_.wire, ctx_.wire_scale});
    in_flight_.push_back(std::move(sync));
  }

  // Overlapped, so never redone: a failed fragment sync is skipped (θ_p and its momentum untouched,
  // the local fragment kept as it is, to be averaged at the fragment's next sync).
  Sync apply_oldest() {
    std::unique_ptr<FragmentSync> sync = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (!sync->pending.wait()) return Sync::aborted;
    Fragment& frag = fragments_[sync->fragment];
    frag.anchor->outer_step(sync->delta);
    for (size_t k = 0; k < frag.index.size(); ++k) {
      torch::Tensor local = frag.params[k].detach();
      local.copy_(torch::lerp(frag.anchor->theta()[k].detach(), local, cfg_.merge_alpha));  // α·local + (1−α)·global
    }
    return Sync::committed;
  }

  StreamingDiLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  std::vector<Fragment> fragments_;
  std::deque<std::unique_ptr<FragmentSync>> in_flight_;  // in start order; every worker starts them in the same order
};

}  // namespace

std::unique_ptr<Policy> make_streaming_diloco(const StreamingDiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<StreamingDiLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
