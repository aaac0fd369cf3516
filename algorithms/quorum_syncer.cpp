// The quorum syncer of Decoupled DiLoCo (arXiv 2604.21428), as far as the paper's text was readable
// (docs/policies-quorum-syncer.md says what is the paper's and what is locosim's).
//
// Learner m, from the global model θ it last received (version v_m):
//   every step:        θ_m ← InnerOpt(θ_m, ∇L_m)
//   after H steps:     push g_m = θ − θ_m with n_m, its steps; receive the syncer's θ; θ_m ← θ
//                      (at once, with the syncer's latest θ: the learner never waits for a merge;
//                      wait_for_merge: once its push is merged)
// Syncer: pushes join the open window as they arrive. The window merges when
//   (every live learner has pushed into it) or (q distinct learners have, and the grace window
//   G = grace_factor · ḡ (at most grace_max_s) has passed since the q-th did),
// where q = min(quorum, learners still training) and ḡ is the mean gap between arrivals, updated at
// each arrival: ḡ ← (ḡ + gap) / 2 (the first gap: ḡ ← gap; before any gap, ḡ = 0). A merge is one
// outer step on the token-weighted mean of the window's pushes (each step trains the same tokens):
//   Δ = Σ_m n_m · g_m / Σ_m n_m;   μ_buf ← μ·μ_buf + Δ;   θ ← θ − η·(Δ + μ·μ_buf)
// The window's pushes are summed in (rank, push) order, so its merge does not depend on the order of
// arrival. Once the pushes received hold K × train.steps inner steps the open window merges at once,
// as does every push after it, and each reply tells its learner to stop.
// Wire per learner per push: P·b + 8 bytes up, P·4 + 16 bytes down, through the syncer's host.
#include "algorithms/quorum_syncer.hpp"

#include <torch/utils.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

namespace {

constexpr int kSyncerReplyDone = 1, kSyncerReplyMetaSize = 2;  // after [0]: the version
constexpr int kSyncerPushMetaSize = 1;                    // [0]: the steps

class Syncer : public ParameterServer {
 public:
  Syncer(const QuorumSyncerConfig& cfg, const std::vector<torch::Tensor>& theta, int workers, int64_t total_steps)
      : cfg_(cfg),
        quorum_(cfg.quorum > 0 ? cfg.quorum : (workers + 1) / 2),
        steps_to_train_(static_cast<int64_t>(workers) * total_steps),
        last_version_(workers, 0),
        pushes_(workers, 0),
        waiting_(workers, 0) {
    for (const auto& t : theta) {
      theta_.push_back(t.detach().to(torch::kFloat32, false, /*copy=*/true));
      momentum_.push_back(torch::zeros_like(theta_.back()));
    }
  }

  void apply(int, const std::vector<torch::Tensor>&, double) override {
    throw std::logic_error("the quorum syncer runs its own windows: a transport hands it pushes through arrive()");
  }

  void arrive(int rank, const std::vector<torch::Tensor>& up, double now_s, const std::vector<int>& members) override {
    torch::NoGradGuard no_grad;
    // A window whose grace passed before this push arrived merged then: the push starts the next one.
    if (!window_.empty() && quorum_at_s_ >= 0 && deadline_s_ < now_s) merge(deadline_s_);
    if (last_arrival_s_ >= 0) {
      const double gap = now_s - last_arrival_s_;
      mean_gap_s_ = mean_gap_s_ < 0 ? gap : (mean_gap_s_ + gap) / 2;
    }
    last_arrival_s_ = now_s;
    Push p{rank, pushes_[rank]++, {}, static_cast<int64_t>(up.back()[0].item<double>()), last_version_[rank]};
    for (size_t i = 0; i + kSyncerPushMetaSize < up.size(); ++i) {
      p.g.push_back(up[i].to(theta_[i].device(), torch::kFloat32, false, /*copy=*/true));
    }
    steps_received_ += p.steps;
    ++waiting_[rank];
    window_.push_back(std::move(p));
    tick(now_s, members);
  }

  void tick(double now_s, const std::vector<int>& members) override {
    if (window_.empty()) return;
    std::set<int> in;
    for (const Push& p : window_) in.insert(p.rank);
    int training = 0, training_in = 0;
    for (int r : members) {
      if (stopped(r)) continue;
      ++training;
      training_in += in.count(r) ? 1 : 0;
    }
    const int64_t q = std::max<int64_t>(1, std::min<int64_t>(quorum_, training));
    if (quorum_at_s_ < 0 && static_cast<int64_t>(in.size()) >= q) {
      quorum_at_s_ = now_s;
      double grace = cfg_.grace_factor * std::max(0.0, mean_gap_s_);
      if (cfg_.grace_max_s > 0) grace = std::min(grace, cfg_.grace_max_s);
      deadline_s_ = now_s + grace;
    }
    if (done() || training_in >= training || (quorum_at_s_ >= 0 && deadline_s_ <= now_s)) merge(now_s);
  }

  double deadline_s() const override {
    return !window_.empty() && quorum_at_s_ >= 0 ? deadline_s_ : std::numeric_limits<double>::infinity();
  }
  bool merged(int rank) const override { return waiting_[rank] == 0; }
  bool stopped(int rank) const override { return stopped_.count(rank) > 0; }

  std::vector<torch::Tensor> reply(int rank) override {
    last_version_[rank] = version_;
    if (done()) stopped_.insert(rank);
    std::vector<torch::Tensor> out;
    for (const auto& t : theta_) out.push_back(t.clone());
    out.push_back(torch::tensor({static_cast<double>(version_), done() ? 1.0 : 0.0}, torch::kFloat64));
    return out;
  }

  bool done() const override { return steps_received_ >= steps_to_train_; }
  const std::vector<ServerUpdate>& updates() const override { return updates_; }

 private:
  struct Push {
    int rank;
    int64_t number;                // the rank's pushes before this one
    std::vector<torch::Tensor> g;  // its pseudo-gradient, fp32
    int64_t steps;                 // n_m
    int64_t base;                  // the version it trained from
  };

  // One outer step on the token-weighted mean of the window's pushes.
  void merge(double at_s) {
    torch::NoGradGuard no_grad;
    std::sort(window_.begin(), window_.end(),
              [](const Push& a, const Push& b) { return std::tie(a.rank, a.number) < std::tie(b.rank, b.number); });
    double tokens = 0;
    for (const Push& p : window_) tokens += static_cast<double>(p.steps);
    const double eta = cfg_.outer_lr, mu = cfg_.outer_momentum;
    for (size_t i = 0; i < theta_.size(); ++i) {
      torch::Tensor delta = torch::zeros_like(theta_[i]);
      for (const Push& p : window_) delta.add_(p.g[i], static_cast<double>(p.steps) / tokens);
      momentum_[i].mul_(mu).add_(delta);
      theta_[i].sub_(eta * (delta + mu * momentum_[i]));
    }
    ++version_;
    for (const Push& p : window_) {
      updates_.push_back({at_s, p.rank, version_, version_ - 1 - p.base, p.steps});
      --waiting_[p.rank];
    }
    window_.clear();
    quorum_at_s_ = -1;
  }

  QuorumSyncerConfig cfg_;
  int64_t quorum_;
  int64_t steps_to_train_;
  std::vector<torch::Tensor> theta_, momentum_;
  int64_t version_ = 0;               // merges so far
  int64_t steps_received_ = 0;        // inner steps in the pushes received
  std::vector<int64_t> last_version_;  // by rank: the version of its last reply
  std::vector<int64_t> pushes_;        // by rank: pushes received
  std::vector<int64_t> waiting_;       // by rank: its pushes not merged yet
  std::set<int> stopped_;              // ranks a reply told to stop
  std::vector<Push> window_;           // the open window, in order of arrival
  double quorum_at_s_ = -1;            // when the open window's quorum came in (-1: not yet)
  double deadline_s_ = 0;              // then: when its grace window ends
  double last_arrival_s_ = -1;
  double mean_gap_s_ = -1;             // ḡ (-1: no gap seen yet)
  std::vector<ServerUpdate> updates_;
};

class QuorumSyncer : public Policy {
 public:
  QuorumSyncer(const QuorumSyncerConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)), anchor_(ctx_.params) {}

  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, std::min(step, ctx_.total_steps - 1), ctx_.total_steps);
    if (++steps_in_round_ < cfg_.inner_steps) return Sync::none;
    return push();
  }

  bool ends_itself() const override { return true; }
  bool done() const override { return done_; }

 private:
  Sync push() {
    std::vector<torch::Tensor> up;  // g_m = θ − θ_m, as the wire carries it, then n_m
    for (const auto& g : anchor_.pseudo_gradient(ctx_.params)) up.push_back(through_wire(g, cfg_.wire));
    const std::vector<torch::Tensor>& theta = anchor_.theta();
    ServerExchange exchange;
    exchange.up_bytes = wire_bytes(up, cfg_.wire) * ctx_.wire_scale + 8 * kSyncerPushMetaSize;
    up.push_back(torch::tensor({static_cast<double>(steps_in_round_)}, torch::kFloat64));
    exchange.down_bytes = wire_bytes(theta, WireFormat::fp32) * ctx_.wire_scale + 8 * kSyncerReplyMetaSize;
    exchange.own_windows = true;
    exchange.reply_at_once = !cfg_.wait_for_merge;
    exchange.make_server = [this] {
      return make_quorum_server(cfg_, anchor_.theta(), ctx_.transport->world_size(), ctx_.total_steps);
    };
    std::vector<torch::Tensor> down;
    const bool applied = ctx_.transport->push_pull(up, down, exchange);
    if (applied) {
      for (size_t i = 0; i < theta.size(); ++i) theta[i].copy_(down[i]);
      done_ = down.back()[kSyncerReplyDone].item<double>() != 0;
    }
    // Received or not, the next H steps start from the model last received.
    anchor_.restart(ctx_.params);
    steps_in_round_ = 0;
    return applied ? Sync::committed : Sync::aborted;
  }

  QuorumSyncerConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  Anchor anchor_;  // θ: the model last received from the syncer
  bool done_ = false;
  int64_t steps_in_round_ = 0;
};

}  // namespace

std::unique_ptr<ParameterServer> make_quorum_server(const QuorumSyncerConfig& cfg, const std::vector<torch::Tensor>& theta,
                                                    int workers, int64_t total_steps) {
  return std::make_unique<Syncer>(cfg, theta, workers, total_steps);
}

std::unique_ptr<Policy> make_quorum_syncer(const QuorumSyncerConfig& cfg, PolicyContext ctx) {
  return std::make_unique<QuorumSyncer>(cfg, std::move(ctx));
}

}  // namespace locosim
