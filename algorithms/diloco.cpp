// DiLoCo, Douillard et al. 2023 (arXiv 2311.08105), Algorithm 1; defaults as in OpenDiLoCo
// (arXiv 2407.07852). Each worker keeps its own inner optimizer state across rounds.
//
//   every step:          θ_i ← InnerOpt(θ_i, ∇L_i)
//   every H steps:       Δ   ← (1/k) Σ_i (θ − θ_i)          pseudo-gradient, one all-reduce
//                        m   ← μ·m + Δ
//                        θ   ← θ − η·(Δ + μ·m)             outer: nesterov (torch SGD, nesterov=true)
//                        θ   ← θ − η·m                     outer: sgd (heavy ball; μ 0, η 1: FedAvg)
//                        θ   ← Adam(θ, Δ; η, β1, β2, ε)    outer: adam (torch Adam)
//                        θ_i ← θ
// Wire per worker per round: a ring all-reduce of P values, 2(K-1)/K · P · b bytes each way.
// With prune: p each worker sends its Δ_i trimmed to its largest values instead, all-gathered (it is
// sent K−1 times on a mesh), and every worker merges them by elected sign (outer_prune.hpp): the
// merge needs each Δ_i, not only their sum.
//
// Timed rounds (round: fastest | seconds, for uneven hardware) last a time budget instead of H steps and
// average Δ weighted by tokens: Δ ← Σ_i n_i·(θ − θ_i) / Σ_i n_i (algorithms/round_clock.hpp). The run
// has ⌈train.steps / H⌉ rounds (train.steps is the fastest worker's step count), and the learning-rate
// schedule runs on the round's position: round r's j-th step has the schedule's step r·H + min(j, H − 1).
#include "algorithms/diloco.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <algorithm>

#include "algorithms/local_sgd.hpp"
#include "algorithms/outer_prune.hpp"
#include "algorithms/policy.hpp"
#include "algorithms/round_clock.hpp"

namespace locosim {

namespace {

class DiLoCo : public Policy {
 public:
  DiLoCo(const DiLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg),
        ctx_(std::move(ctx)),
        inner_(make_optimizer(ctx_.params, ctx_.optimizer)),
        anchor_(ctx_.params, cfg_.outer),
        rounds_((ctx_.total_steps + cfg_.inner_steps - 1) / cfg_.inner_steps) {
    if (cfg_.round != DiLoCoRound::steps) {
      clock_ = std::make_unique<RoundClock>(cfg_.round, cfg_.inner_steps, cfg_.round_s, *ctx_.transport);
    }
    for (const auto& g : anchor_.theta()) {
      if (cfg_.prune == 0) break;
      prune_codecs_.emplace_back(g.numel(), cfg_.prune, cfg_.wire);
      prune_bytes_ += prune_codecs_.back().bytes();
    }
  }

  Sync step(int64_t step) override {
    if (!clock_) {
      optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
      return (step + 1) % cfg_.inner_steps == 0 ? synchronize() : Sync::none;
    }
    const int64_t position = std::min(clock_->schedule_step(round_), ctx_.total_steps - 1);
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, position, ctx_.total_steps);
    return clock_->another_fits() ? Sync::none : synchronize();
  }

  bool ends_itself() const override { return clock_ != nullptr; }
  bool done() const override { return round_ >= rounds_; }

  // After a round θ_i = θ on every member: a joiner takes θ, the outer momentum, and the donor's
  // inner optimizer state (as torchft heals a replica from a peer's whole state), and its round clock.
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    anchor_.save(archive, "global", "outer");
    save_optimizer(archive, "inner", *inner_);
    const double budget_s = clock_ ? clock_->budget_s() : cfg_.round_s;
    archive.write("round", torch::tensor({static_cast<double>(round_), budget_s}, torch::kFloat64));
  }
  void load(torch::serialize::InputArchive& archive) override {
    anchor_.load(archive, "global", "outer");
    load_optimizer(archive, "inner", *inner_);
    torch::Tensor clock;
    archive.read("round", clock);
    round_ = static_cast<int64_t>(clock[0].item<double>());
    if (clock_) clock_->set_budget_s(clock[1].item<double>());
    anchor_.restart(ctx_.params);
    if (clock_) clock_->start_round();
  }

 private:
  // Commit or redo: the outer step is taken only on a completed all-reduce (redone among the
  // survivors if a member is lost). A round given up leaves θ and the momentum untouched and restarts
  // every member from θ: its inner steps are thrown away, never half-applied.
  Sync synchronize() {
    const std::vector<torch::Tensor> mine = anchor_.pseudo_gradient(ctx_.params);  // Δ_i = θ − θ_i
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    std::vector<torch::Tensor> delta;  // averaged in place
    const bool committed = cfg_.prune > 0 ? gather_pruned(mine, delta) : commit_or_redo([&] {
      delta.clear();
      delta.reserve(mine.size());
      double weight = 1;  // this worker's share × the members: the all-reduce's mean is then the weighted mean
      if (clock_ && !clock_->token_weight(weight)) return Pending([] { return false; });
      for (const auto& d : mine) delta.push_back(!anchor_.values() ? d : weight == 1 ? d.clone() : d * weight);
      return ctx_.transport->all_reduce_mean(delta, wire);
    });
    if (committed) anchor_.outer_step(delta);
    anchor_.restart(ctx_.params);
    ++round_;
    if (clock_) clock_->start_round();
    return committed ? Sync::committed : Sync::aborted;
  }

  // prune > 0: all-gathers every member's trimmed Δ_i and sets `delta` to their merge (prune_merge),
  // over the members whose payload arrived. False if no all-gather completed (the round is given up).
  bool gather_pruned(const std::vector<torch::Tensor>& mine, std::vector<torch::Tensor>& delta) {
    std::vector<torch::Tensor> payload;  // per tensor: positions, values
    for (size_t i = 0; i < mine.size(); ++i) prune_codecs_[i].encode(mine[i], payload);
    std::vector<std::vector<torch::Tensor>> gathered;
    const bool done = commit_or_redo([&] {
      gathered.clear();
      return ctx_.transport->all_gather(payload, prune_bytes_ * ctx_.wire_scale, gathered);
    });
    if (!done) return false;
    delta.clear();
    for (size_t i = 0; i < mine.size(); ++i) {
      if (!anchor_.values()) {
        delta.push_back(mine[i]);
        continue;
      }
      std::vector<torch::Tensor> trimmed;  // in rank order
      for (const auto& g : gathered) {
        if (!g.empty()) trimmed.push_back(prune_codecs_[i].decode(g, 2 * i));
      }
      const torch::Tensor merged = cfg_.prune_merge == DiLoCoPruneMerge::ties ? ties_merge(trimmed) : mean_merge(trimmed);
      delta.push_back(merged.view(mine[i].sizes()));
    }
    return true;
  }

  DiLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  Anchor anchor_;                         // θ: the outer parameters, identical on every worker, and the outer optimizer
  std::unique_ptr<RoundClock> clock_;     // timed rounds only
  std::vector<PruneCodec> prune_codecs_;  // prune > 0: one per tensor of θ
  double prune_bytes_ = 0;                // prune > 0: this worker's payload a round, before wire_scale
  int64_t rounds_;                        // rounds in the run: ⌈train.steps / H⌉
  int64_t round_ = 0;                     // rounds done
};

}  // namespace

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<DiLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
