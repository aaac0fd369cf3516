// Asynchronous DiLoCo, Liu et al. 2024 (arXiv 2401.09135), Algorithms 1-3 and Eq. 6.
//
// Worker i, from the model θ it last received:
//   every step:               θ_i ← InnerOpt(θ_i, ∇L_i)
//   after H_i steps:          push g_i = θ − θ_i and its step count; receive the server's θ, H_i; θ_i ← θ
// Server, on each push g (t counts the pushes, from 1; N = delay, c = momentum_activation):
//   nesterov:                 m ← β·m + g;  θ ← θ − ε·(g + β·m)
//   delayed_nesterov:         b ← b + g
//                             t mod N = 0:  m ← β·m + b/N;  θ ← θ − ε·((1 − cN + c)·β·m + g/N);  b ← 0
//                             otherwise:    θ ← θ − ε·(c·β·m + g/N)
//   DyLU:                     H_i = max(1, ⌊H · v_i / max_j v_j⌋), v the workers' step rates as last
//                             pushed (H until a worker has pushed once)
// The run ends once the pushes applied hold K × train.steps inner steps (what synchronous DiLoCo
// trains); a worker that is computing then still pushes, is applied, and stops. Each worker's learning
// rate follows the schedule by its own step count, held at its floor past train.steps (the paper's
// per-shard schedule, clipped). With N = K, c = 0, identical workers and a window that holds all K
// pushes, a window is synchronous DiLoCo's round: θ ← θ − ε·(ḡ + β·(β·m + ḡ)).
// Wire per worker per push: P·b up, P·4 down, plus 24 and 24 bytes of counts.
#include "algorithms/async_diloco.hpp"

#include <torch/utils.h>

#include <algorithm>
#include <cmath>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

namespace {

// What a push carries after the pseudo-gradient, and a reply after the model (float64).
constexpr int kPushSteps = 0, kPushStepSeconds = 1, kPushMetaSize = 2;
constexpr int kReplyInnerSteps = 1, kReplyDone = 2, kReplyMetaSize = 3;  // after [0]: the version

class Server : public ParameterServer {
 public:
  Server(const AsyncDiLoCoConfig& cfg, const std::vector<torch::Tensor>& theta, int workers, int64_t total_steps)
      : cfg_(cfg),
        delay_(cfg.delay > 0 ? cfg.delay : workers),
        steps_to_train_(static_cast<int64_t>(workers) * total_steps),
        last_version_(workers, 0),
        step_s_(workers, 0) {
    for (const auto& t : theta) {
      theta_.push_back(t.detach().to(torch::kFloat32, false, /*copy=*/true));
      momentum_.push_back(torch::zeros_like(theta_.back()));
      buffer_.push_back(torch::zeros_like(theta_.back()));
    }
  }

  void apply(int rank, const std::vector<torch::Tensor>& up, double now_s) override {
    torch::NoGradGuard no_grad;
    const double eps = cfg_.outer_lr, beta = cfg_.outer_momentum;
    const torch::Tensor& meta = up.back();
    ++pushes_;
    for (size_t i = 0; i < theta_.size(); ++i) {
      const torch::Tensor g = up[i].to(theta_[i].device(), torch::kFloat32);
      if (cfg_.outer == AsyncOuter::nesterov) {
        momentum_[i].mul_(beta).add_(g);
        theta_[i].sub_(eps * (g + beta * momentum_[i]));
        continue;
      }
      const double n = static_cast<double>(delay_), c = cfg_.momentum_activation;
      buffer_[i].add_(g);
      if (pushes_ % delay_ == 0) {
        momentum_[i].mul_(beta).add_(buffer_[i] / n);
        theta_[i].sub_(eps * ((1 - c * n + c) * beta * momentum_[i] + g / n));
        buffer_[i].zero_();
      } else {
        theta_[i].sub_(eps * (c * beta * momentum_[i] + g / n));
      }
    }
    const auto steps = static_cast<int64_t>(meta[kPushSteps].item<double>());
    step_s_[rank] = meta[kPushStepSeconds].item<double>();
    steps_trained_ += steps;
    updates_.push_back({now_s, rank, pushes_, pushes_ - 1 - last_version_[rank], steps});
  }

  std::vector<torch::Tensor> reply(int rank) override {
    last_version_[rank] = pushes_;
    std::vector<torch::Tensor> out;
    for (const auto& t : theta_) out.push_back(t.clone());
    out.push_back(torch::tensor({static_cast<double>(pushes_), static_cast<double>(inner_steps_for(rank)),
                                 done() ? 1.0 : 0.0},
                                torch::kFloat64));
    return out;
  }

  bool done() const override { return steps_trained_ >= steps_to_train_; }
  const std::vector<ServerUpdate>& updates() const override { return updates_; }

 private:
  // DyLU (Eq. 6): the fastest worker does H steps, the others as many as take it the same time.
  int64_t inner_steps_for(int rank) const {
    if (!cfg_.dylu || step_s_[rank] <= 0) return cfg_.inner_steps;
    double fastest = step_s_[rank];
    for (double s : step_s_) {
      if (s > 0) fastest = std::min(fastest, s);
    }
    // Measured step times of equal GPUs differ in their last bits: a hair below a whole step counts.
    const double steps = static_cast<double>(cfg_.inner_steps) * fastest / step_s_[rank];
    const auto h = static_cast<int64_t>(std::floor(steps + 1e-6));
    return std::max<int64_t>(1, h);
  }

  AsyncDiLoCoConfig cfg_;
  int64_t delay_;
  int64_t steps_to_train_;
  std::vector<torch::Tensor> theta_, momentum_, buffer_;
  int64_t pushes_ = 0;                // the version: pushes applied
  int64_t steps_trained_ = 0;         // inner steps in them
  std::vector<int64_t> last_version_;  // by rank: the version of its last reply
  std::vector<double> step_s_;         // by rank: its mean step time, as last pushed (0: unknown)
  std::vector<ServerUpdate> updates_;
};

class AsyncDiLoCo : public Policy {
 public:
  AsyncDiLoCo(const AsyncDiLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg),
        ctx_(std::move(ctx)),
        inner_(make_optimizer(ctx_.params, ctx_.optimizer)),
        anchor_(ctx_.params),
        inner_steps_(cfg_.inner_steps) {}

  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, std::min(step, ctx_.total_steps - 1), ctx_.total_steps);
    const double now = ctx_.transport->now_s();
    round_compute_s_ += now - step_end_s_;
    step_end_s_ = now;
    if (++steps_in_round_ < inner_steps_) return Sync::none;
    return push();
  }

  bool ends_itself() const override { return true; }
  bool done() const override { return done_; }

 private:
  Sync push() {
    std::vector<torch::Tensor> up;  // g_i = θ − θ_i, as the wire carries it, then the counts
    for (const auto& g : anchor_.pseudo_gradient(ctx_.params)) up.push_back(through_wire(g, cfg_.wire));
    const std::vector<torch::Tensor>& theta = anchor_.theta();
    ServerExchange exchange;
    exchange.up_bytes = wire_bytes(up, cfg_.wire) * ctx_.wire_scale + 8 * kPushMetaSize;
    const double steps = static_cast<double>(steps_in_round_);
    up.push_back(torch::tensor({steps, round_compute_s_ / steps}, torch::kFloat64));
    exchange.down_bytes = wire_bytes(theta, WireFormat::fp32) * ctx_.wire_scale + 8 * kReplyMetaSize;
    exchange.grace_s = cfg_.grace_s;
    exchange.make_server = [this] {
      return make_async_server(cfg_, anchor_.theta(), ctx_.transport->world_size(), ctx_.total_steps);
    };
    std::vector<torch::Tensor> down;
    const bool applied = ctx_.transport->push_pull(up, down, exchange);
    if (applied) {
      const torch::Tensor meta = down.back();
      for (size_t i = 0; i < theta.size(); ++i) theta[i].copy_(down[i]);
      inner_steps_ = static_cast<int64_t>(meta[kReplyInnerSteps].item<double>());
      done_ = meta[kReplyDone].item<double>() != 0;
    }
    // Applied or not, the next H_i steps start from the model last received.
    anchor_.restart(ctx_.params);
    steps_in_round_ = 0;
    round_compute_s_ = 0;
    step_end_s_ = ctx_.transport->now_s();
    return applied ? Sync::committed : Sync::aborted;
  }

  AsyncDiLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  Anchor anchor_;                     // θ: the model last received from the server
  int64_t inner_steps_;               // H_i, as the server last said
  bool done_ = false;
  int64_t steps_in_round_ = 0;
  double round_compute_s_ = 0;
  double step_end_s_ = 0;
};

}  // namespace

std::unique_ptr<ParameterServer> make_async_server(const AsyncDiLoCoConfig& cfg, const std::vector<torch::Tensor>& theta,
                                                   int workers, int64_t total_steps) {
  return std::make_unique<Server>(cfg, theta, workers, total_steps);
}

std::unique_ptr<Policy> make_async_diloco(const AsyncDiLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<AsyncDiLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
