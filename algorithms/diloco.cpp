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
// Timed rounds (round: fastest | seconds) are for uneven hardware: a round lasts a time budget B
// instead of H steps, and worker i does the n_i steps that fit (a step is begun only if the last one's
// duration still fits before the deadline). The average is weighted by tokens, as FedAvg weights
// clients by their data (McMahan et al. 2017): Δ ← Σ_i n_i·(θ − θ_i) / Σ_i n_i, so a worker that did
// half the steps carries half the weight, and every token counts the same whichever GPU trained it.
// Before the all-reduce the members all-gather (n_i, mean step time of the round): 16 bytes each.
// With round: fastest, B = H × the fastest member's mean step time of the previous round; the first
// round learns it from an all-gather after each worker's first step (the round's clock starts again
// after that wait). On identical GPUs every worker does H steps a round: DiLoCo's rounds exactly.
// The run has ⌈train.steps / H⌉ rounds (train.steps is the fastest worker's step count), and the
// learning-rate schedule runs on the round's position: round r's j-th step has the schedule's step
// r·H + min(j, H − 1).
#include "algorithms/diloco.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <algorithm>

#include "algorithms/policy_registry.hpp"
#include "algorithms/outer_prune.hpp"
#include "config/section.hpp"

namespace locosim {

const std::vector<std::string>& diloco_outer_names() {
  static const std::vector<std::string> names = {"nesterov", "sgd", "adam"};
  return names;
}

DiLoCoConfig DiLoCoConfig::parse(Section& s) {
  DiLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  const std::string round = s.choice("round", {"steps", "fastest", "seconds"}, "steps");
  if (round == "fastest") c.round = DiLoCoRound::fastest;
  if (round == "seconds") {
    c.round = DiLoCoRound::seconds;
    // A round of a microsecond is no round; a year is past any run.
    c.round_s = s.number("round_s", std::nullopt, Range::closed(1e-6, 3.2e7));
  }
  // `nesterov: true | false`, the older key, is `outer: nesterov | sgd`; both given must agree.
  std::optional<bool> nesterov;
  if (s.has("nesterov")) nesterov = s.flag("nesterov");
  const std::string implied = !nesterov || *nesterov ? "nesterov" : "sgd";
  const std::string outer = s.choice("outer", diloco_outer_names(), implied);
  if (nesterov && outer != implied) {
    s.fail("nesterov", "nesterov: " + std::string(*nesterov ? "true" : "false") + " contradicts outer: " + outer +
                           " (nesterov: true is outer: nesterov, false is outer: sgd); write outer: alone");
  }
  if (outer == "sgd") c.outer = DiLoCoOuter::sgd;
  if (outer == "adam") c.outer = DiLoCoOuter::adam;
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  if (c.outer == DiLoCoOuter::adam) {
    if (s.has("outer_momentum")) {
      s.fail("outer_momentum", "is read by outer: nesterov | sgd; outer: adam takes outer_betas and outer_eps");
    }
    std::vector<double> betas =
        s.numbers("outer_betas", 2, std::vector<double>{c.outer_beta1, c.outer_beta2}, Range::closed_open(0, 1));
    c.outer_beta1 = betas[0];
    c.outer_beta2 = betas[1];
    // Adam divides by sqrt(v) + ε; the paper's outer Adam needs ε as large as 0.1, past 10 it is SGD.
    c.outer_eps = s.number("outer_eps", c.outer_eps, Range::open_closed(0, 10));
  } else {
    for (const char* key : {"outer_betas", "outer_eps"}) {
      if (s.has(key)) s.fail(key, "is read by outer: adam only, not outer: " + outer);
    }
    c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  }
  c.prune = s.number("prune", c.prune, Range::closed_open(0, 1));
  if (c.prune > 0 && c.round != DiLoCoRound::steps) {
    // Both merges average the workers unweighted: they have no place for token weights.
    s.fail("prune", "needs round: steps (the pruned merge is not weighted by tokens), got round: " + round);
  }
  if (c.prune > 0) {
    if (s.choice("prune_merge", {"mean", "ties"}, "mean") == "ties") c.prune_merge = DiLoCoPruneMerge::ties;
  } else if (s.has("prune_merge")) {
    s.fail("prune_merge", "is read with prune > 0 only");
  }
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

namespace {

// torch's SGD and Adam are exactly the outer rules above. Nesterov needs μ > 0 (at μ 0 it is SGD).
std::unique_ptr<torch::optim::Optimizer> make_outer_optimizer(const std::vector<torch::Tensor>& global,
                                                              const DiLoCoConfig& cfg) {
  if (cfg.outer == DiLoCoOuter::adam) {
    return std::make_unique<torch::optim::Adam>(
        global, torch::optim::AdamOptions(cfg.outer_lr).betas({cfg.outer_beta1, cfg.outer_beta2}).eps(cfg.outer_eps));
  }
  const bool nesterov = cfg.outer == DiLoCoOuter::nesterov && cfg.outer_momentum > 0;
  return std::make_unique<torch::optim::SGD>(
      global, torch::optim::SGDOptions(cfg.outer_lr).momentum(cfg.outer_momentum).nesterov(nesterov));
}

class DiLoCo : public Policy {
 public:
  DiLoCo(const DiLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg),
        ctx_(std::move(ctx)),
        inner_(make_optimizer(ctx_.params, ctx_.optimizer)),
        rounds_((ctx_.total_steps + cfg_.inner_steps - 1) / cfg_.inner_steps),
        budget_s_(cfg_.round_s) {
    for (const auto& p : ctx_.params) global_.push_back(p.detach().clone().requires_grad_(true));
    outer_ = make_outer_optimizer(global_, cfg_);
    for (const auto& g : global_) {
      if (cfg_.prune == 0) break;
      prune_codecs_.emplace_back(g.numel(), cfg_.prune, cfg_.wire);
      prune_bytes_ += prune_codecs_.back().bytes();
    }
  }

  Sync step(int64_t step) override {
    if (cfg_.round == DiLoCoRound::steps) {
      optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
      if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
      return synchronize();
    }
    const int64_t position = round_ * cfg_.inner_steps + std::min(steps_in_round_, cfg_.inner_steps - 1);
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, std::min(position, ctx_.total_steps - 1), ctx_.total_steps);
    const double now = ctx_.transport->now_s();
    const double step_s = now - step_end_s_;
    step_end_s_ = now;
    round_compute_s_ += step_s;
    ++steps_in_round_;
    if (budget_s_ == 0) learn_budget(step_s);  // round: fastest, first step of the run
    // Another step fits if the last one's duration does. (A transport without a clock, whose steps
    // take no time, times its rounds in steps.)
    const bool fits = step_s > 0 ? now + step_s <= round_start_s_ + budget_s_ * (1 + 1e-9)
                                 : steps_in_round_ < cfg_.inner_steps;
    return fits ? Sync::none : synchronize();
  }

  bool ends_itself() const override { return cfg_.round != DiLoCoRound::steps; }
  bool done() const override { return round_ >= rounds_; }

  // After a round θ_i = θ on every member: a joiner takes θ, the outer momentum, and the donor's
  // inner optimizer state (as torchft heals a replica from a peer's whole state), and its round clock.
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "global", global_);
    save_optimizer(archive, "outer", *outer_);
    save_optimizer(archive, "inner", *inner_);
    archive.write("round", torch::tensor({static_cast<double>(round_), budget_s_}, torch::kFloat64));
  }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "global", global_);
    load_optimizer(archive, "outer", *outer_);
    load_optimizer(archive, "inner", *inner_);
    torch::Tensor clock;
    archive.read("round", clock);
    round_ = static_cast<int64_t>(clock[0].item<double>());
    budget_s_ = clock[1].item<double>();
    for (size_t i = 0; i < global_.size(); ++i) ctx_.params[i].detach().copy_(global_[i].detach());
    start_round();
  }

 private:
  // Commit or redo: the outer step is taken only on a completed all-reduce (redone among the
  // survivors if a member is lost). A round given up leaves θ and the momentum untouched and restarts
  // every member from θ: its inner steps are thrown away, never half-applied.
  Sync synchronize() {
    // Parameters on the meta device (a timing-only run) hold no values: the same collectives on
    // tensors of the same shapes, without the arithmetic (a LibTorch call per tensor that would change
    // nothing, most of a large timing-only run's time).
    const bool values = !ctx_.params.front().is_meta();
    if (!values && meta_delta_.empty()) {
      for (const auto& g : global_) meta_delta_.push_back(torch::empty_like(g));
    }
    std::vector<torch::Tensor> mine = meta_delta_;  // Δ_i = θ − θ_i
    for (size_t i = 0; values && i < global_.size(); ++i) mine.push_back(global_[i].detach() - ctx_.params[i].detach());
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    std::vector<torch::Tensor> delta;  // averaged in place
    const bool committed = cfg_.prune > 0 ? gather_pruned(mine, values, delta) : commit_or_redo([&] {
      delta.clear();
      double weight = 1;  // this worker's share × the members: the all-reduce's mean is then the weighted mean
      if (ends_itself() && !token_weight(weight)) return Pending([] { return false; });
      for (const auto& d : mine) delta.push_back(!values ? d : weight == 1 ? d.clone() : d * weight);
      return ctx_.transport->all_reduce_mean(delta, wire);
    });
    if (committed) {
      for (size_t i = 0; i < global_.size(); ++i) global_[i].mutable_grad() = delta[i];
      outer_step(*outer_, global_);
    }
    for (size_t i = 0; values && i < global_.size(); ++i) ctx_.params[i].detach().copy_(global_[i].detach());
    ++round_;
    start_round();
    return committed ? Sync::committed : Sync::aborted;
  }

  // prune > 0: all-gathers every member's trimmed Δ_i and sets `delta` to their merge (prune_merge),
  // over the members whose payload arrived. False if no all-gather completed (the round is given up).
  bool gather_pruned(const std::vector<torch::Tensor>& mine, bool values, std::vector<torch::Tensor>& delta) {
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
      if (!values) {
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

  // Timed rounds: all-gathers every member's (steps, mean step time) of this round; sets `weight` to
  // n_i·k / Σ n_j and, for round: fastest, the next round's budget. False if the all-gather failed.
  bool token_weight(double& weight) {
    std::vector<std::vector<torch::Tensor>> all;
    const torch::Tensor mine = torch::tensor(
        {static_cast<double>(steps_in_round_), round_compute_s_ / static_cast<double>(steps_in_round_)}, torch::kFloat64);
    if (!ctx_.transport->all_gather({mine}, 16, all).wait()) return false;
    double steps = 0, members = 0, fastest_step_s = 0;
    for (const auto& a : all) {
      if (a.empty()) continue;
      const double n = a[0][0].item<double>(), step_s = a[0][1].item<double>();
      steps += n;
      members += 1;
      fastest_step_s = members == 1 ? step_s : std::min(fastest_step_s, step_s);
    }
    weight = static_cast<double>(steps_in_round_) * members / steps;
    if (cfg_.round == DiLoCoRound::fastest) set_budget(fastest_step_s);
    return true;
  }

  // round: fastest, after the run's first step: the members' step times give the first budget.
  void learn_budget(double step_s) {
    std::vector<std::vector<torch::Tensor>> all;
    double fastest = step_s;  // alone if the all-gather failed: its own pace
    if (ctx_.transport->all_gather({torch::tensor({step_s}, torch::kFloat64)}, 8, all).wait()) {
      for (const auto& a : all) {
        if (!a.empty()) fastest = std::min(fastest, a[0][0].item<double>());
      }
    }
    set_budget(fastest);
    // The wait is not the round's: it restarts, this first step in it, at the pace of the others.
    step_end_s_ = ctx_.transport->now_s();
    round_start_s_ = step_end_s_ - step_s;
  }

  void set_budget(double fastest_step_s) {
    budget_s_ = fastest_step_s > 0 ? static_cast<double>(cfg_.inner_steps) * fastest_step_s : -1;
  }

  void start_round() {
    round_start_s_ = step_end_s_ = ctx_.transport->now_s();
    steps_in_round_ = 0;
    round_compute_s_ = 0;
  }

  DiLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  std::vector<torch::Tensor> global_;  // θ: the outer parameters, identical on every worker
  std::unique_ptr<torch::optim::Optimizer> outer_;
  std::vector<PruneCodec> prune_codecs_;  // prune > 0: one per tensor of θ
  double prune_bytes_ = 0;                // prune > 0: this worker's payload a round, before wire_scale
  std::vector<torch::Tensor> meta_delta_;  // timing only: tensors of Δ's shapes, made once
  // The round clock (timed rounds only).
  int64_t rounds_;               // rounds in the run: ⌈train.steps / H⌉
  int64_t round_ = 0;            // rounds done
  double budget_s_;              // B; 0 until learnt (round: fastest), −1 if there is no clock
  double round_start_s_ = 0;
  double step_end_s_ = 0;        // when the last step ended (or the round began)
  int64_t steps_in_round_ = 0;
  double round_compute_s_ = 0;   // this round's steps, start to end
};

}  // namespace

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<DiLoCo>(cfg, std::move(ctx));
}

PolicyEntry diloco_policy() {
  return policy_entry<DiLoCoConfig>({
      .name = "diloco",
      .paper = "arXiv 2311.08105; OpenDiLoCo arXiv 2407.07852",
      .sync_period = [](const DiLoCoConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      // Timed rounds: a round's steps come from measured step times.
      .reads_clock = [](const DiLoCoConfig& c) { return c.round != DiLoCoRound::steps; },
      .make = make_diloco,
      .handover = "at the end of a round: the outer parameters and momentum, the inner optimizer",
      .on_failed_collective = "redo the all-reduce among the survivors, up to 3 attempts; then the round is aborted: "
                              "every member restarts from the outer parameters",
      .bytes_per_round = "2(K−1)/K · P · b every H steps (pruned: an all-gather of the trimmed payload)",
      .example = "{name: diloco, inner_steps: 4, wire: fp16}",
  });
}

}  // namespace locosim
