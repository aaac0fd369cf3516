// NoLoCo, Kolehmainen et al. 2025 (arXiv 2506.10911): DiLoCo without the all-reduce. The outer rule
// and its defaults as in the authors' released code (jkolehm/noloco, SparseOptimizerC and the
// *_mean* configs: H 50, pairs, outer_lr 0.7, outer_momentum 0.5, inner Adam).
//
// Worker i keeps its own outer weights φ_i and outer momentum δ_i (they differ between workers).
//   every step:        θ_i ← InnerOpt(θ_i, ∇L_i)
//   every H steps t:   G   ← worker i's group at t: the ranks drawn from (seed, t), the same on every worker
//                      Δ_i ← φ_i − θ_i                                  its pseudo-gradient
//                      φ̄, Δ̄ ← the means of φ_j and Δ_j over G            one all-reduce of 2P values among G
//                      δ_i ← α·δ_i − β·Δ̄ − γ·(φ_i − φ̄)                 the pull toward the group's weights
//                      φ_i ← φ_i + δ_i;   θ_i ← φ_i
// The paper calls the step Nesterov; the code's is this heavy-ball form, with γ = β (one outer_lr for
// both terms). Over the whole group (n = K) the φ_i stay equal, the pull vanishes, and this is DiLoCo
// with outer: sgd, momentum α and lr β. The code draws the groups with numpy from the step count and
// needs n to divide K; here a permutation from (seed, t) cut into groups of n, the last one holding the
// remainder (a group of one steps on its own Δ). The paper's random routing of activations between
// pipeline stages is a model-parallel device, apart from the optimizer: not modelled.
// Wire per worker per outer step: a ring all-reduce of 2P values among n, 2(n−1)/n · 2P · b bytes
// each way, on the routes between the group's hosts.
#include "algorithms/noloco.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <numeric>
#include <random>

#include "algorithms/policy.hpp"

namespace locosim {

std::vector<std::vector<int>> noloco_groups(uint64_t seed, int64_t t, int world_size, int64_t group_size) {
  // Fisher-Yates on mt19937_64, whose output the standard fixes: the same groups on every platform.
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(t));
  std::vector<int> order(world_size);
  std::iota(order.begin(), order.end(), 0);
  for (int i = world_size - 1; i > 0; --i) std::swap(order[i], order[rng() % static_cast<uint64_t>(i + 1)]);
  std::vector<std::vector<int>> groups;
  for (int start = 0; start < world_size; start += static_cast<int>(group_size)) {
    const int end = static_cast<int>(std::min<int64_t>(world_size, start + group_size));
    std::vector<int> group(order.begin() + start, order.begin() + end);
    std::sort(group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  return groups;
}

namespace {

class NoLoCo : public Policy {
 public:
  NoLoCo(const NoLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)) {
    for (const auto& p : ctx_.params) {
      phi_.push_back(p.detach().clone());
      momentum_.push_back(torch::zeros_like(p.detach()));
    }
  }

  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
    const int64_t t = (step + 1) / cfg_.inner_steps - 1;
    const std::vector<int> group = my_group(t);
    // On the meta device (timing only) the tensors hold no values: the same collective, no arithmetic.
    const bool values = !ctx_.params.front().is_meta();
    std::vector<torch::Tensor> mine;  // φ_i, then Δ_i; averaged in place over the group
    const size_t n = phi_.size();
    for (size_t i = 0; i < n; ++i) mine.push_back(phi_[i]);
    for (size_t i = 0; i < n; ++i) mine.push_back(values ? phi_[i] - ctx_.params[i].detach() : phi_[i]);
    std::vector<torch::Tensor> means;
    // Commit or redo among the group's members still in the run (a partner lost: a worker alone steps
    // on its own Δ). A round given up leaves φ_i and δ_i as they were and restarts from φ_i.
    const bool committed = commit_or_redo([&] {
      means.clear();
      for (const auto& m : mine) means.push_back(values ? m.clone() : m);
      return ctx_.transport->all_reduce_mean_among(group, means, Wire{cfg_.wire, ctx_.wire_scale});
    });
    for (size_t i = 0; values && i < n; ++i) {
      if (committed) {
        torch::Tensor& delta = momentum_[i];
        delta.mul_(cfg_.outer_momentum).sub_(means[n + i], cfg_.outer_lr).sub_(phi_[i] - means[i], cfg_.pull);
        phi_[i].add_(delta);
      }
      ctx_.params[i].detach().copy_(phi_[i]);
    }
    return committed ? Sync::committed : Sync::aborted;
  }

  // After an outer step nothing is in flight, but the workers' states differ: a joiner takes the
  // donor's φ, δ and inner optimizer state (as torchft heals a replica from a peer) and draws its
  // groups from then on as everyone does.
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "phi", phi_);
    save_tensors(archive, "momentum", momentum_);
    save_optimizer(archive, "inner", *inner_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "phi", phi_);
    load_tensors(archive, "momentum", momentum_);
    load_optimizer(archive, "inner", *inner_);
    for (size_t i = 0; i < phi_.size(); ++i) ctx_.params[i].detach().copy_(phi_[i]);
  }

 private:
  std::vector<int> my_group(int64_t t) const {
    const int rank = ctx_.transport->rank();
    for (auto& g : noloco_groups(cfg_.seed, t, ctx_.transport->world_size(), cfg_.group_size)) {
      if (std::binary_search(g.begin(), g.end(), rank)) return g;
    }
    return {rank};  // unreachable: the groups cover every rank
  }

  NoLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  std::vector<torch::Tensor> phi_;       // φ_i: this worker's outer weights
  std::vector<torch::Tensor> momentum_;  // δ_i
};

}  // namespace

std::unique_ptr<Policy> make_noloco(const NoLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<NoLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
