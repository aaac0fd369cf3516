// SPARTA, as EXO Gym implements it (exo-explore/gym, exogym/strategy/sparta.py and sparta_diloco.py at
// commit 9fa323c26364f4437ffd23517da5d65946003963; docs/policies-sparta.md compares them point by point).
//
//   every step s:        θ_i ← InnerOpt(θ_i, ∇L_i)
//                        for each tensor t: S ← positions of t drawn from (seed, s, t), the same on every worker
//                                           θ_i[S] ← (1/K) Σ_j θ_j[S]        one all-reduce of the selected values
//   sparta_diloco, also every H steps (after that step's SPARTA):
//                        Δ ← (1/K) Σ_j (θ − θ_j)                             DiLoCo's all-reduce of P values
//                        m ← μ·m + Δ;  θ ← θ − η·(Δ + μ·m);  θ_i ← θ           outer Nesterov SGD (η 0.7, μ 0.9)
//
// EXO Gym draws each tensor's mask as Bernoulli(p) per value on every rank and broadcasts rank 0's
// (one byte per value, every step); here the positions come from a seed every worker shares, so no
// mask travels: the count is ⌊p·n⌋ or ⌈p·n⌉ (each value in with probability p, as the Bernoulli
// mask), the positions uniform without replacement. The parameters themselves are averaged (not a
// pseudo-gradient), in place, rounded to the wire format as FedAvg's.
// Wire per worker per step: one ring all-reduce of the Σ_t k_t selected values, 2(K−1)/K · Σ_t k_t · b
// bytes each way (on average 2(K−1)/K · p·P · b); sparta_diloco adds 2(K−1)/K · P · b every H steps.
#include "algorithms/sparta.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_set>

#include "algorithms/policy.hpp"

namespace locosim {

namespace {

// SplitMix64's finalizer: spreads (seed, step, tensor) over the generator's seeds.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::mt19937_64 draw_generator(uint64_t seed, int64_t step, size_t tensor) {
  return std::mt19937_64(mix(mix(mix(seed) ^ static_cast<uint64_t>(step)) ^ static_cast<uint64_t>(tensor)));
}

// The first draw of the generator: the count.
int64_t draw_count(std::mt19937_64& rng, int64_t numel, double p) {
  const double expected = p * static_cast<double>(numel);
  const double base = std::floor(expected);
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // uniform in [0, 1), 53 bits
  return std::min<int64_t>(numel, static_cast<int64_t>(base) + (u < expected - base ? 1 : 0));
}

// Uniform in [0, bound) without modulo bias: r is kept when it falls in the top multiple of bound.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    const uint64_t r = rng();
    if (r >= reject_below) return r % bound;
  }
}

}  // namespace

int64_t sparta_count(uint64_t seed, int64_t step, size_t tensor, int64_t numel, double p) {
  std::mt19937_64 rng = draw_generator(seed, step, tensor);
  return draw_count(rng, numel, p);
}

std::vector<int64_t> sparta_indices(uint64_t seed, int64_t step, size_t tensor, int64_t numel, double p) {
  std::mt19937_64 rng = draw_generator(seed, step, tensor);
  const int64_t k = draw_count(rng, numel, p);
  std::vector<int64_t> out;
  if (k == numel) {
    out.resize(static_cast<size_t>(numel));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  // Floyd: for j = n−k .. n−1, take a uniform t in [0, j]; if t is taken already, take j.
  out.reserve(static_cast<size_t>(k));
  if (k * 16 < numel) {
    std::unordered_set<int64_t> taken;
    taken.reserve(static_cast<size_t>(k));
    for (int64_t j = numel - k; j < numel; ++j) {
      const auto t = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(j) + 1));
      const int64_t pick = taken.count(t) ? j : t;
      taken.insert(pick);
      out.push_back(pick);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<char> taken(static_cast<size_t>(numel), 0);
  for (int64_t j = numel - k; j < numel; ++j) {
    const auto t = static_cast<size_t>(uniform_below(rng, static_cast<uint64_t>(j) + 1));
    taken[taken[t] ? static_cast<size_t>(j) : t] = 1;
  }
  for (int64_t i = 0; i < numel; ++i) {
    if (taken[static_cast<size_t>(i)]) out.push_back(i);
  }
  return out;
}

namespace {

// Plain SPARTA is this with H = 0 (no outer step).
class Sparta : public Policy {
 public:
  Sparta(const SpartaConfig& cfg, int64_t inner_steps, double outer_lr, double outer_momentum, PolicyContext ctx)
      : cfg_(cfg), inner_steps_(inner_steps), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)) {
    if (inner_steps_ == 0) return;
    for (const auto& p : ctx_.params) global_.push_back(p.detach().clone().requires_grad_(true));
    // torch's SGD with Nesterov momentum: EXO Gym's outer optimizer (SGD, lr 0.7, nesterov, momentum 0.9).
    outer_ = std::make_unique<torch::optim::SGD>(
        global_, torch::optim::SGDOptions(outer_lr).momentum(outer_momentum).nesterov(outer_momentum > 0));
  }

  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    const Sync sparse = average_selected(step);
    if (inner_steps_ == 0 || (step + 1) % inner_steps_ != 0) return sparse;
    const Sync outer = outer_round();
    return sparse == Sync::aborted || outer == Sync::aborted ? Sync::aborted : Sync::committed;
  }

  // After a step nothing is in flight, but the workers' parameters differ outside the averaged
  // positions: a joiner takes the donor's parameters and inner optimizer state (and, with DiLoCo, the
  // outer parameters and momentum), and draws the positions from then on as everyone does.
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "params", ctx_.params);
    save_optimizer(archive, "inner", *inner_);
    if (inner_steps_ == 0) return;
    save_tensors(archive, "global", global_);
    save_optimizer(archive, "outer", *outer_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "params", ctx_.params);
    load_optimizer(archive, "inner", *inner_);
    if (inner_steps_ == 0) return;
    load_tensors(archive, "global", global_);
    load_optimizer(archive, "outer", *outer_);
  }

 private:
  // SPARTA: the selected values of every tensor, gathered into one flat tensor each, all-reduced in
  // one call, the means written back. Commit or redo; a step given up leaves every worker's values as
  // they were (the next step averages other positions). No value selected (tiny tensors, small p):
  // no collective.
  Sync average_selected(int64_t step) {
    // On the meta device (timing only) the tensors hold no values: the same collective on tensors of
    // the same sizes (the counts need no positions), no arithmetic.
    const bool values = !ctx_.params.front().is_meta();
    std::vector<torch::Tensor> flat, positions, payload;
    for (size_t i = 0; i < ctx_.params.size(); ++i) {
      const torch::Tensor& p = ctx_.params[i];
      if (!values) {
        const int64_t k = sparta_count(cfg_.seed, step, i, p.numel(), cfg_.p);
        if (k > 0) payload.push_back(torch::empty({k}, p.options()));
        continue;
      }
      const std::vector<int64_t> at = sparta_indices(cfg_.seed, step, i, p.numel(), cfg_.p);
      if (at.empty()) continue;
      flat.push_back(p.detach().view({-1}));
      positions.push_back(torch::tensor(at, torch::kLong));
      payload.push_back(flat.back().index_select(0, positions.back()));
    }
    if (payload.empty()) return Sync::none;
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    if (!commit_or_redo([&] { return ctx_.transport->all_reduce_mean(payload, wire); })) return Sync::aborted;
    for (size_t j = 0; j < flat.size(); ++j) flat[j].index_copy_(0, positions[j], payload[j]);
    return Sync::committed;
  }

  // DiLoCo's round (algorithms/diloco.cpp, outer: nesterov): commit or redo; a round given up leaves
  // θ and the momentum untouched and restarts every member from θ.
  Sync outer_round() {
    const bool values = !ctx_.params.front().is_meta();
    std::vector<torch::Tensor> delta;  // Δ_i = θ − θ_i, averaged in place
    for (size_t i = 0; i < global_.size(); ++i) {
      delta.push_back(values ? global_[i].detach() - ctx_.params[i].detach() : torch::empty_like(global_[i]));
    }
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    const bool committed = commit_or_redo([&] { return ctx_.transport->all_reduce_mean(delta, wire); });
    if (committed) {
      for (size_t i = 0; i < global_.size(); ++i) global_[i].mutable_grad() = delta[i];
      outer_step(*outer_, global_);
    }
    for (size_t i = 0; values && i < global_.size(); ++i) ctx_.params[i].detach().copy_(global_[i].detach());
    return committed ? Sync::committed : Sync::aborted;
  }

  SpartaConfig cfg_;
  int64_t inner_steps_;  // H; 0: plain SPARTA
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  std::vector<torch::Tensor> global_;  // θ: DiLoCo's outer parameters, identical on every worker
  std::unique_ptr<torch::optim::Optimizer> outer_;
};

}  // namespace

std::unique_ptr<Policy> make_sparta(const SpartaConfig& cfg, PolicyContext ctx) {
  return std::make_unique<Sparta>(cfg, 0, 0, 0, std::move(ctx));
}

std::unique_ptr<Policy> make_sparta_diloco(const SpartaDiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<Sparta>(cfg.sparta, cfg.inner_steps, cfg.outer_lr, cfg.outer_momentum, std::move(ctx));
}

}  // namespace locosim
